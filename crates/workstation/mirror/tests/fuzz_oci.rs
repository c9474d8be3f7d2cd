//! Fuzz target (issue #10 item 9): OCI manifests, indexes, image
//! references and digests as the mirror reads them from registries
//! ([`okd_mirror::oci`]).
//!
//! Manifests: OCI and Docker schema 2 image manifests and indexes built
//! from generated descriptors (digests, sizes up to the u64 limit,
//! platforms, foreign layers with `urls`), with `Content-Type` headers
//! of every kind, then sometimes mutated (JSON values swapped, byte edits).
//! Properties: no panic; an unmutated document parses to exactly the
//! descriptors it was built from (foreign layers left out; sizes above
//! int64 refused, as the OCI descriptor spec allows no more) with the media
//! type the rules pick and the digest of its bytes; a mutated one parses
//! or is refused with a message.
//!
//! References: generated from registry, path, tag and digest parts, then
//! sometimes byte-mutated. Properties: no panic; a parsed reference prints
//! to a string that parses to the same reference.
//!
//! CI runs a few thousand cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use bytes::Bytes;
use okd_mirror::oci::{
    DOCKER_LIST, DOCKER_MANIFEST, Descriptor, Digest, Manifest, OCI_INDEX, OCI_MANIFEST, Parsed,
    Reference, Repo,
};
use okd_test_utils::fuzz;
use proptest::prelude::*;
use serde_json::{Value, json};

fn digest() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::array::uniform32(any::<u8>()).prop_map(|b| {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("sha256:{hex}")
        }),
        1 => prop::sample::select(vec![
            "sha256:",
            "sha512:00",
            "sha256:ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
            "sha256:é123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd",
            "",
        ])
        .prop_map(String::from),
    ]
}

/// A generated descriptor (sometimes a foreign layer, with `urls`).
fn descriptor(with_platform: bool) -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            OCI_MANIFEST,
            DOCKER_MANIFEST,
            "application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
            "",
        ]),
        digest(),
        prop_oneof![
            Just(0u64),
            any::<u64>(),
            Just(u64::MAX),
            Just(9_007_199_254_740_993)
        ],
        prop::option::of(("[a-z0-9]{1,8}", "[a-z]{1,8}")),
        prop::bool::weighted(0.1),
    )
        .prop_map(move |(mt, d, size, platform, foreign)| {
            let mut j = json!({"mediaType": mt, "digest": d, "size": size});
            if with_platform && let Some((arch, os)) = platform {
                j["platform"] = json!({"architecture": arch, "os": os});
            }
            if foreign {
                j["urls"] = json!(["https://example.invalid/layer"]);
            }
            j
        })
}

/// A generated manifest or index document.
#[derive(Debug, Clone)]
struct Doc {
    json: Value,
    content_type: Option<String>,
}

fn document() -> impl Strategy<Value = Doc> {
    let index = (
        prop::sample::select(vec![Some(OCI_INDEX), Some(DOCKER_LIST), None]),
        prop::collection::vec(descriptor(true), 0..5),
    )
        .prop_map(|(mt, ms)| {
            let mut j = json!({
                "schemaVersion": 2,
                "manifests": ms,
            });
            if let Some(mt) = mt {
                j["mediaType"] = json!(mt);
            }
            j
        });
    let image = (
        prop::sample::select(vec![Some(OCI_MANIFEST), Some(DOCKER_MANIFEST), None]),
        descriptor(false),
        prop::collection::vec(descriptor(false), 0..6),
    )
        .prop_map(|(mt, config, layers)| {
            let mut j = json!({
                "schemaVersion": 2,
                "config": config,
                "layers": layers,
            });
            if let Some(mt) = mt {
                j["mediaType"] = json!(mt);
            }
            j
        });
    let content_type = prop::option::of(prop::sample::select(vec![
        OCI_MANIFEST.to_string(),
        OCI_INDEX.to_string(),
        DOCKER_MANIFEST.to_string(),
        DOCKER_LIST.to_string(),
        "application/json".to_string(),
        "application/json; charset=utf-8".to_string(),
        "application/octet-stream".to_string(),
        format!("{OCI_MANIFEST}; charset=utf-8"),
        "".to_string(),
        " ; ".to_string(),
        "text/html".to_string(),
    ]));
    (prop_oneof![index, image], content_type)
        .prop_map(|(json, content_type)| Doc { json, content_type })
}

fn expected_descriptor(v: &Value) -> Option<Descriptor> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    Some(Descriptor {
        media_type: s("mediaType").unwrap_or("").to_string(),
        digest: Digest::parse(s("digest")?).ok()?,
        // OCI image-spec descriptor.md: `size` is an int64; larger ones are refused.
        size: v
            .get("size")?
            .as_u64()
            .filter(|n| i64::try_from(*n).is_ok())?,
        architecture: v
            .pointer("/platform/architecture")
            .and_then(Value::as_str)
            .map(String::from),
        os: v
            .pointer("/platform/os")
            .and_then(Value::as_str)
            .map(String::from),
    })
}

/// What [`Manifest::parse`] must give for an unmutated document: `None`
/// when some descriptor is invalid (bad digest).
fn expected(doc: &Value) -> Option<Parsed> {
    if let Some(ms) = doc.get("manifests").and_then(Value::as_array) {
        return ms
            .iter()
            .map(expected_descriptor)
            .collect::<Option<Vec<_>>>()
            .map(Parsed::Index);
    }
    let config = expected_descriptor(doc.get("config")?)?;
    let layers = doc["layers"]
        .as_array()?
        .iter()
        .filter(|l| l.get("urls").is_none())
        .map(expected_descriptor)
        .collect::<Option<Vec<_>>>()?;
    Some(Parsed::Image { config, layers })
}

fn expected_media_type(doc: &Doc) -> String {
    let ct = doc
        .content_type
        .as_deref()
        .map(|c| c.split(';').next().unwrap_or("").trim())
        .filter(|c| !c.is_empty() && *c != "application/json" && *c != "application/octet-stream");
    match (ct, doc.json.get("mediaType").and_then(Value::as_str)) {
        (Some(c), _) => c.to_string(),
        (None, Some(d)) => d.to_string(),
        (None, None) if doc.json.get("manifests").is_some() => OCI_INDEX.to_string(),
        (None, None) => OCI_MANIFEST.to_string(),
    }
}

#[test]
fn fuzz_manifests_and_indexes() {
    let strategy = (
        document(),
        prop_oneof![
            3 => Just(Vec::new()),
            1 => prop::collection::vec(fuzz::tree_edit(&["manifests", "config", "layers", "digest", "size", "mediaType", "platform", "urls", "schemaVersion"]), 1..4),
        ],
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec(fuzz::byte_edit(), 1..4),
        ],
    );
    let tally = fuzz::Tally::default();
    fuzz::run(
        "mirror oci manifests",
        1000,
        strategy,
        |(doc, tree_edits, byte_edits)| {
            let mut text = serde_json::to_vec(&doc.json).expect("JSON");
            if !tree_edits.is_empty() {
                // The tree mutator works on YAML values; JSON is a subset.
                let mut y: serde_yaml_ng::Value =
                    serde_json::from_slice(&text).expect("JSON reads as YAML value");
                fuzz::apply_tree_edits(&mut y, &tree_edits);
                match serde_json::to_vec(&y) {
                    Ok(t) => text = t,
                    Err(_) => tally.hit("edit not JSON"),
                }
            }
            fuzz::apply_byte_edits(&mut text, &byte_edits);
            let mutated = !tree_edits.is_empty() || !byte_edits.is_empty();
            let bytes = Bytes::from(text.clone());
            let m = match Manifest::new(bytes, doc.content_type.as_deref()) {
                Ok(m) => m,
                Err(e) => {
                    prop_assert!(mutated, "an unmutated document was refused: {e}");
                    prop_assert!(!e.to_string().is_empty());
                    tally.hit("refused by new");
                    return Ok(());
                }
            };
            prop_assert_eq!(&m.digest, &Digest::of(&text));
            prop_assert!(m.digest.as_str().starts_with("sha256:"));
            let parsed = m.parse();
            tally.hit(match &parsed {
                Ok(Parsed::Index(_)) => "index",
                Ok(Parsed::Image { .. }) => "image",
                Err(_) => "refused by parse",
            });
            if let Err(e) = &parsed {
                prop_assert!(!e.to_string().is_empty());
            }
            if !mutated {
                prop_assert_eq!(&m.media_type, &expected_media_type(&doc));
                prop_assert_eq!(parsed.ok(), expected(&doc.json), "{}", doc.json);
            }
            Ok(())
        },
    );
    tally.print("mirror oci manifests");
}

fn reference_text() -> impl Strategy<Value = String> {
    let registry = prop_oneof![
        Just(String::new()),
        prop::sample::select(vec![
            "quay.io/",
            "localhost/",
            "localhost:5000/",
            "127.0.0.1:5000/",
            "[::1]:5000/",
            "registry.okd.example:5000/",
            "docker.io/",
            "a:b/",
            ":/",
            "Quay.IO/",
        ])
        .prop_map(String::from),
        "[a-z0-9.:-]{1,12}/",
    ];
    let component = prop_oneof![
        "[a-z0-9]{1,6}",
        "[a-z0-9]{1,3}([._-]|__|--)[a-z0-9]{1,3}",
        "[a-zA-Z0-9._-]{0,6}",
    ];
    let path = prop::collection::vec(component, 1..4).prop_map(|c| c.join("/"));
    let tag = prop::option::of(prop_oneof![
        "[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}",
        Just("a".repeat(128)),
        Just("a".repeat(129)),
        "[ -~]{0,6}",
    ]);
    let dig = prop::option::of(digest());
    (
        registry,
        path,
        tag,
        dig,
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec(fuzz::byte_edit(), 1..3),
        ],
    )
        .prop_map(|(r, p, t, d, edits)| {
            let mut s = format!("{r}{p}");
            if let Some(t) = t {
                s.push(':');
                s.push_str(&t);
            }
            if let Some(d) = d {
                s.push('@');
                s.push_str(&d);
            }
            let mut b = s.into_bytes();
            fuzz::apply_byte_edits(&mut b, &edits);
            String::from_utf8_lossy(&b).into_owned()
        })
}

#[test]
fn fuzz_references_and_digests() {
    let tally = fuzz::Tally::default();
    fuzz::run("mirror oci references", 2000, reference_text(), |s| {
        let _ = Digest::parse(&s);
        if let Ok(r) = Repo::parse(&s) {
            let again = Repo::parse(&r.to_string());
            prop_assert_eq!(again.as_ref(), Ok(&r), "{:?} printed as {}", s, r);
        }
        match Reference::parse(&s) {
            Ok(r) => {
                tally.hit("parsed");
                prop_assert!(!r.reference().is_empty());
                let printed = r.to_string();
                let again = Reference::parse(&printed);
                prop_assert_eq!(again.as_ref(), Ok(&r), "{:?} printed as {}", s, printed);
            }
            Err(e) => {
                tally.hit("refused");
                prop_assert!(!e.to_string().is_empty());
            }
        }
        Ok(())
    });
    tally.print("mirror oci references");
}
