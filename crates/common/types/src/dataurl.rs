//! RFC 2397 data URLs as openshift-install writes them into Ignition configs.
//!
//! The installer encodes every file with `dataurl.EncodeBytes`, whose media
//! type comes from Go's `net/http.DetectContentType` (the WHATWG MIME sniffing
//! algorithm, first 512 bytes) with `"; "` replaced by `";"` (openshift/installer's
//! vendored `github.com/vincent-petithory/dataurl/dataurl.go`).
//! [`detect_content_type`] re-implements that table; [`encode`] and [`decode`]
//! are the URL codec.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// How many leading bytes the sniffer looks at (Go's `sniffLen`).
const SNIFF_LEN: usize = 512;

/// An error decoding a data URL.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DataUrlError {
    /// The string does not start with `data:`.
    #[error("not a data URL (must start with \"data:\")")]
    NotDataUrl,
    /// No `,` separates the header from the data.
    #[error("data URL has no ',' between the media type and the data")]
    MissingComma,
    /// The base64 payload is invalid.
    #[error("data URL has invalid base64 data: {0}")]
    Base64(String),
    /// A `%XX` escape is malformed.
    #[error("data URL has an invalid percent escape")]
    Percent,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

fn is_tag_terminator(b: u8) -> bool {
    b == b' ' || b == b'>'
}

/// Sniffs the media type of `data` exactly as Go's `http.DetectContentType`:
/// returns e.g. `"text/plain; charset=utf-8"`, `"application/octet-stream"`,
/// `"application/x-gzip"`, `"text/xml; charset=utf-8"`. Never fails; empty data
/// is `text/plain; charset=utf-8`.
pub fn detect_content_type(data: &[u8]) -> &'static str {
    let data = &data[..data.len().min(SNIFF_LEN)];
    let first_non_ws = data.iter().position(|b| !is_ws(*b)).unwrap_or(data.len());
    let trimmed = &data[first_non_ws..];

    const HTML: &[&[u8]] = &[
        b"<!DOCTYPE HTML",
        b"<HTML",
        b"<HEAD",
        b"<SCRIPT",
        b"<IFRAME",
        b"<H1",
        b"<DIV",
        b"<FONT",
        b"<TABLE",
        b"<A",
        b"<STYLE",
        b"<TITLE",
        b"<B",
        b"<BODY",
        b"<BR",
        b"<P",
        b"<!--",
    ];
    for sig in HTML {
        if trimmed.len() > sig.len()
            && trimmed[..sig.len()].eq_ignore_ascii_case(sig)
            && is_tag_terminator(trimmed[sig.len()])
        {
            return "text/html; charset=utf-8";
        }
    }
    if trimmed.starts_with(b"<?xml") {
        return "text/xml; charset=utf-8";
    }
    let exact: &[(&[u8], &'static str)] = &[
        (b"%PDF-", "application/pdf"),
        (b"%!PS-Adobe-", "application/postscript"),
        (b"\xFE\xFF", "text/plain; charset=utf-16be"),
        (b"\xFF\xFE", "text/plain; charset=utf-16le"),
        (b"\xEF\xBB\xBF", "text/plain; charset=utf-8"),
        (b"\x00\x00\x01\x00", "image/x-icon"),
        (b"\x00\x00\x02\x00", "image/x-icon"),
        (b"BM", "image/bmp"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"\x89PNG\x0D\x0A\x1A\x0A", "image/png"),
        (b"\xFF\xD8\xFF", "image/jpeg"),
        (b".snd", "audio/basic"),
        (b"OggS\x00", "application/ogg"),
        (b"MThd\x00\x00\x00\x06", "audio/midi"),
        (b"ID3", "audio/mpeg"),
        (b"\x1A\x45\xDF\xA3", "video/webm"),
        (b"\x1F\x8B\x08", "application/x-gzip"),
        (b"PK\x03\x04", "application/zip"),
        (b"Rar!\x1A\x07\x00", "application/x-rar-compressed"),
        (b"Rar!\x1A\x07\x01\x00", "application/x-rar-compressed"),
        (b"\x00\x61\x73\x6D", "application/wasm"),
        (b"wOFF", "font/woff"),
        (b"wOF2", "font/woff2"),
        (b"OTTO", "font/otf"),
        (b"ttcf", "font/collection"),
        (b"\x00\x01\x00\x00", "font/ttf"),
    ];
    for (sig, mt) in exact {
        if data.starts_with(sig) {
            return mt;
        }
    }
    // RIFF containers and the "FORM....AIFF" pattern (masked signatures).
    if data.len() >= 14 && &data[..4] == b"RIFF" && &data[8..14] == b"WEBPVP" {
        return "image/webp";
    }
    if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WAVE" {
        return "audio/wave";
    }
    if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"AVI " {
        return "video/avi";
    }
    if data.len() >= 12 && &data[..4] == b"FORM" && &data[8..12] == b"AIFF" {
        return "audio/aiff";
    }
    if is_mp4(data) {
        return "video/mp4";
    }
    if data.iter().any(|&b| {
        b <= 0x08 || b == 0x0B || (0x0E..=0x1A).contains(&b) || (0x1C..=0x1F).contains(&b)
    }) {
        return "application/octet-stream";
    }
    "text/plain; charset=utf-8"
}

fn is_mp4(data: &[u8]) -> bool {
    if data.len() < 12 {
        return false;
    }
    let box_size = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
    if data.len() < box_size || !box_size.is_multiple_of(4) || &data[4..8] != b"ftyp" {
        return false;
    }
    let mut st = 8;
    while st < box_size {
        if st == 12 {
            st += 4;
            continue;
        }
        if data.get(st..st + 3) == Some(b"mp4") {
            return true;
        }
        st += 4;
    }
    false
}

/// Encodes `data` as `data:<sniffed type without the space>;base64,<standard base64>`,
/// byte-identical to the installer's `dataurl.EncodeBytes`
/// (`github.com/vincent-petithory/dataurl`, vendored by openshift/installer).
pub fn encode(data: &[u8]) -> String {
    let mt = detect_content_type(data).replace("; ", ";");
    format!("data:{mt};base64,{}", STANDARD.encode(data))
}

/// Decodes a data URL: `data:[<mediatype>][;base64],<data>`; the non-base64
/// form is percent-decoded (as in the MCS's `data:,…` files; RFC 2397 and
/// openshift/machine-config-operator `pkg/server`).
///
/// # Errors
/// [`DataUrlError`] when the prefix, the comma, the base64 or an escape is bad.
pub fn decode(url: &str) -> Result<Vec<u8>, DataUrlError> {
    let rest = url.strip_prefix("data:").ok_or(DataUrlError::NotDataUrl)?;
    let (header, payload) = rest.split_once(',').ok_or(DataUrlError::MissingComma)?;
    if header.split(';').any(|p| p.eq_ignore_ascii_case("base64")) {
        let clean: String = payload
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        return STANDARD
            .decode(clean.as_bytes())
            .map_err(|e| DataUrlError::Base64(e.to_string()));
    }
    let bytes = payload.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(DataUrlError::Percent)?;
            let s = std::str::from_utf8(hex).map_err(|_| DataUrlError::Percent)?;
            out.push(u8::from_str_radix(s, 16).map_err(|_| DataUrlError::Percent)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_matches_go() {
        assert_eq!(detect_content_type(b""), "text/plain; charset=utf-8");
        assert_eq!(
            detect_content_type(b"-----BEGIN CERTIFICATE-----\n"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            detect_content_type(b"  <?xml version=\"1.0\"?>"),
            "text/xml; charset=utf-8"
        );
        assert_eq!(detect_content_type(b"<html>"), "text/html; charset=utf-8");
        assert_eq!(detect_content_type(b"<htmlx"), "text/plain; charset=utf-8");
        assert_eq!(
            detect_content_type(b"\x1f\x8b\x08\x00"),
            "application/x-gzip"
        );
        assert_eq!(detect_content_type(b"abc\x00"), "application/octet-stream");
        assert_eq!(
            detect_content_type(b"tab\tand\r\nnewline\x1b"),
            "text/plain; charset=utf-8"
        );
    }

    #[test]
    fn round_trip() {
        let u = encode(b"hello\n");
        assert_eq!(u, "data:text/plain;charset=utf-8;base64,aGVsbG8K");
        assert_eq!(decode(&u).unwrap(), b"hello\n");
        assert_eq!(decode("data:,a%20b").unwrap(), b"a b");
        assert_eq!(decode("http://x"), Err(DataUrlError::NotDataUrl));
        assert_eq!(decode("data:text/plain"), Err(DataUrlError::MissingComma));
    }
}
