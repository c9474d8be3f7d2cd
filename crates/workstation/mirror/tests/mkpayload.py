#!/usr/bin/env python3
"""Build a synthetic OKD release payload as an OCI image layout (and push it).

Usage:
  mkpayload.py LAYOUT_DIR --registry 127.0.0.1:PORT [--release-repo okd/okd]
      [--content-repo okd/okd-content] [--version 4.15.0-0.okd-test]
      [--components 24] [--shared-layers 3] [--shared-kib 256]
      [--unique-layers 1] [--unique-kib 64] [--multiarch 1] [--seed 1]
      [--gzip-level 0] [--push] [--jobs 4] [--verify]

Standard library only. Layout of the payload:
  * `--shared-layers` base layers (`--shared-kib` each) shared by every
    amd64 component image and by the release image;
  * one "middle" layer (`--shared-kib`) shared by every other component
    (indexes 0, 2, 4, ...), so partly shared layers exist too;
  * `--unique-layers` layers (`--unique-kib` each) per component image;
  * the first `--multiarch` components are OCI image indexes with a
    linux/amd64 and a linux/arm64 image; the arm64 images have their own
    base layers (`--shared-layers` x `--shared-kib`, shared by the arm64
    images) and their own unique layers;
  * the release image: the amd64 base layers plus one layer holding
    release-manifests/image-references (an ImageStream pointing at
    <registry>/<content-repo>@<component digest>) and
    release-manifests/release-metadata; its config has the label
    io.openshift.release=<version>.

Determinism: every layer's bytes come from random.Random("<seed>:<layer key>")
(string seeds are hashed with SHA-512, independent of PYTHONHASHSEED), tar
headers have fixed mtime/owner and gzip has mtime 0, so one seed always gives
the same digests. Random bytes do not compress, so the default gzip level is 0
(stored deflate blocks, fast); --gzip-level 1 is allowed too.

index.json refs (org.opencontainers.image.ref.name): the release as <version>,
each component as <name>.

stdout: one JSON object
  {"release": {"repo", "tag", "digest"},
   "components": [{"name", "digest", "mediaType", "children": [...]}],
   "blobs": {"count": N, "bytes": B},   # distinct layers+configs+manifests
   "images": M,                         # top-level images: release + components
   "manifests": K}                      # image manifests + indexes
Progress goes to stderr.

--push copies (skopeo copy --all --preserve-digests --dest-tls-verify=false,
plain HTTP) the components to docker://<registry>/<content-repo>:<name> and
then the release to docker://<registry>/<release-repo>:<version>, checking the
pushed digest (--digestfile) against the printed one; with --verify it also
checks `sha256(skopeo inspect --raw ...@digest)` for every component.
"""

import argparse
import concurrent.futures
import gzip
import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"
CREATED = "2024-01-01T00:00:00Z"

NAMES = [
    "cli", "installer", "machine-config-operator", "etcd", "hyperkube",
    "cluster-version-operator", "cluster-network-operator", "ovn-kubernetes",
    "oauth-server", "console", "console-operator", "haproxy-router",
    "coredns", "cluster-dns-operator", "cluster-ingress-operator",
    "cluster-kube-apiserver-operator", "cluster-etcd-operator",
    "cluster-authentication-operator", "cluster-image-registry-operator",
    "docker-registry", "cluster-monitoring-operator", "prometheus",
    "prometheus-operator", "alertmanager", "thanos", "kube-state-metrics",
    "node-exporter", "cluster-samples-operator", "cluster-storage-operator",
    "csi-snapshot-controller", "multus-cni", "pod", "tools", "must-gather",
    "baremetal-installer", "ironic", "keepalived-ipfailover", "rhel-coreos",
    "machine-os-content", "cluster-autoscaler", "machine-api-operator",
    "cluster-config-operator", "service-ca-operator", "insights-operator",
    "operator-lifecycle-manager", "operator-registry", "kube-proxy",
    "kube-rbac-proxy", "oauth-proxy", "openshift-apiserver",
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Layout:
    """Writes blobs into an OCI layout and keeps count of distinct ones."""

    def __init__(self, root):
        self.root = root
        self.blobdir = os.path.join(root, "blobs", "sha256")
        os.makedirs(self.blobdir, exist_ok=True)
        with open(os.path.join(root, "oci-layout"), "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)
        self.blobs = {}  # digest -> size
        self.refs = []
        self.manifests = 0

    def blob(self, data):
        hexd = hashlib.sha256(data).hexdigest()
        dg = "sha256:" + hexd
        if dg not in self.blobs:
            path = os.path.join(self.blobdir, hexd)
            if not (os.path.exists(path) and os.path.getsize(path) == len(data)):
                tmp = path + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            self.blobs[dg] = len(data)
        return dg, len(data)

    def json_blob(self, obj):
        return self.blob(json.dumps(obj, separators=(",", ":"), sort_keys=True).encode())

    def add_ref(self, name, media_type, digest, size):
        self.refs.append({"mediaType": media_type, "digest": digest, "size": size,
                          "annotations": {REF_NAME: name}})

    def write_index(self):
        with open(os.path.join(self.root, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": self.refs}, f)


def tar_bytes(files):
    """files: list of (path, bytes); directories are made for every parent."""
    buf = io.BytesIO()
    dirs = []
    for path, _ in files:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.append(d)
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d in dirs:
            ti = tarfile.TarInfo(d)
            ti.type = tarfile.DIRTYPE
            ti.mode = 0o755
            ti.mtime = 0
            t.addfile(ti)
        for path, data in files:
            ti = tarfile.TarInfo(path)
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = 0
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


class Builder:
    def __init__(self, layout, args):
        self.layout = layout
        self.args = args
        self.layer_cache = {}  # key -> descriptor, diff_id

    def layer(self, key, kib=None, files=None):
        """A gzip tar layer: random bytes of `kib` KiB at opt/<key>.bin, or `files`."""
        if key in self.layer_cache:
            return self.layer_cache[key]
        if files is None:
            rnd = random.Random(f"{self.args.seed}:{key}")
            files = [(f"opt/{key}/payload.bin", rnd.randbytes(kib * 1024))]
        raw = tar_bytes(files)
        diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
        gz = gzip.compress(raw, compresslevel=self.args.gzip_level, mtime=0)
        dg, size = self.layout.blob(gz)
        res = ({"mediaType": OCI_LAYER_GZ, "digest": dg, "size": size}, diff_id)
        self.layer_cache[key] = res
        return res

    def image(self, layers, arch, labels):
        """An image manifest for `layers` ([(descriptor, diff_id)])."""
        cfg = {
            "created": CREATED,
            "architecture": arch,
            "os": "linux",
            "config": {"Env": ["PATH=/usr/bin:/bin"], "Cmd": ["/bin/sh"], "Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": [d for _, d in layers]},
            "history": [{"created": CREATED, "created_by": f"mkpayload layer {i}"}
                        for i in range(len(layers))],
        }
        cdg, csz = self.layout.json_blob(cfg)
        man = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": cdg, "size": csz},
            "layers": [l for l, _ in layers],
        }
        self.layout.manifests += 1
        return self.layout.json_blob(man)


def component_name(i):
    return NAMES[i] if i < len(NAMES) else f"component-{i:02d}"


def build(args):
    lay = Layout(args.layout)
    b = Builder(lay, args)
    t0 = time.monotonic()

    def base(arch):
        return [b.layer(f"base-{arch}-{i}", args.shared_kib) for i in range(args.shared_layers)]

    components = []
    for i in range(args.components):
        name = component_name(i)
        commit = hashlib.sha1(f"{args.seed}:{name}".encode()).hexdigest()
        labels = {"io.openshift.build.commit.id": commit,
                  "io.openshift.build.source-location": f"https://example.invalid/{name}",
                  "io.openshift.release.operator": "true"}

        def arch_image(arch):
            layers = list(base(arch))
            if i % 2 == 0:
                layers.append(b.layer(f"middle-{arch}", args.shared_kib))
            layers += [b.layer(f"{name}-{arch}-{j}", args.unique_kib)
                       for j in range(args.unique_layers)]
            return b.image(layers, arch, labels)

        if i < args.multiarch:
            children = []
            for arch in ("amd64", "arm64"):
                dg, sz = arch_image(arch)
                children.append({"mediaType": OCI_MANIFEST, "digest": dg, "size": sz,
                                 "platform": {"architecture": arch, "os": "linux"}})
            dg, sz = lay.json_blob({"schemaVersion": 2, "mediaType": OCI_INDEX,
                                    "manifests": children})
            lay.manifests += 1
            mt = OCI_INDEX
            kids = [c["digest"] for c in children]
        else:
            dg, sz = arch_image("amd64")
            mt = OCI_MANIFEST
            kids = []
        lay.add_ref(name, mt, dg, sz)
        components.append({"name": name, "digest": dg, "mediaType": mt, "children": kids,
                           "commit": commit})
        if (i + 1) % 10 == 0 or i + 1 == args.components:
            log(f"mkpayload: {i + 1}/{args.components} components, "
                f"{sum(lay.blobs.values()) / 1048576:.1f} MiB, {time.monotonic() - t0:.1f}s")

    tags = [{
        "name": c["name"],
        "annotations": {"io.openshift.build.commit.id": c["commit"]},
        "from": {"kind": "DockerImage",
                 "name": f"{args.registry}/{args.content_repo}@{c['digest']}"},
        "generation": None,
        "importPolicy": {},
        "referencePolicy": {"type": ""},
    } for c in components]
    image_refs = {
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": args.version, "creationTimestamp": None},
        "spec": {"lookupPolicy": {"local": False}, "tags": tags},
    }
    metadata = {"kind": "cincinnati-metadata-v0", "version": args.version,
                "previous": [], "metadata": {}}
    rel_layer = b.layer(f"release-{args.version}", files=[
        ("release-manifests/image-references", json.dumps(image_refs, indent=2).encode() + b"\n"),
        ("release-manifests/release-metadata", json.dumps(metadata, indent=2).encode() + b"\n"),
    ])
    rdg, rsz = b.image(base("amd64") + [rel_layer], "amd64",
                       {"io.openshift.release": args.version,
                        "io.openshift.release.base-image-digest": ""})
    lay.add_ref(args.version, OCI_MANIFEST, rdg, rsz)
    lay.write_index()
    log(f"mkpayload: layout {args.layout}: {len(lay.blobs)} blobs, "
        f"{sum(lay.blobs.values()) / 1048576:.1f} MiB, {time.monotonic() - t0:.1f}s")
    for c in components:
        del c["commit"]
    return {
        "release": {"repo": args.release_repo, "tag": args.version, "digest": rdg},
        "components": components,
        "blobs": {"count": len(lay.blobs), "bytes": sum(lay.blobs.values())},
        "images": len(components) + 1,
        "manifests": lay.manifests,
    }


def skopeo_push(layout, ref, dest, want):
    with tempfile.NamedTemporaryFile(prefix="mkpayload-digest-") as df:
        cmd = ["skopeo", "copy", "--all", "--preserve-digests", "--dest-tls-verify=false",
               "--retry-times", "2", "--digestfile", df.name, f"oci:{layout}:{ref}", dest]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
        got = open(df.name).read().strip()
    if got != want:
        raise RuntimeError(f"{dest}: pushed digest {got}, expected {want}")
    return dest


def inspect_digest(registry, repo, digest):
    ref = f"docker://{registry}/{repo}@{digest}"
    p = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", ref],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError(f"skopeo inspect {ref}: {p.stderr.decode().strip()}")
    got = "sha256:" + hashlib.sha256(p.stdout).hexdigest()
    if got != digest:
        raise RuntimeError(f"{ref}: raw manifest hashes to {got}")


def push(args, out):
    t0 = time.monotonic()
    layout = os.path.abspath(args.layout)
    jobs = [(c["name"], f"docker://{args.registry}/{args.content_repo}:{c['name']}", c["digest"])
            for c in out["components"]]
    # The first push uploads the shared base layers; the rest mostly reuse them.
    done = 0
    if jobs:
        skopeo_push(layout, *jobs[0])
        done = 1
        log(f"mkpayload: pushed {jobs[0][1]}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = [ex.submit(skopeo_push, layout, *j) for j in jobs[1:]]
        for f in concurrent.futures.as_completed(futs):
            f.result()
            done += 1
            if done % 10 == 0 or done == len(jobs):
                log(f"mkpayload: pushed {done}/{len(jobs)} components, "
                    f"{time.monotonic() - t0:.1f}s")
    rel = out["release"]
    skopeo_push(layout, rel["tag"], f"docker://{args.registry}/{args.release_repo}:{rel['tag']}",
                rel["digest"])
    log(f"mkpayload: pushed release {args.registry}/{args.release_repo}:{rel['tag']} "
        f"({rel['digest']}), {time.monotonic() - t0:.1f}s")
    if args.verify:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futs = [ex.submit(inspect_digest, args.registry, args.content_repo, c["digest"])
                    for c in out["components"]]
            futs.append(ex.submit(inspect_digest, args.registry, args.release_repo, rel["digest"]))
            for f in futs:
                f.result()
        log(f"mkpayload: verified {len(futs)} manifests by digest in {args.registry}")


def main():
    ap = argparse.ArgumentParser(description="Synthetic OKD release payload as an OCI layout.")
    ap.add_argument("layout")
    ap.add_argument("--registry", required=True, help="host:port used in image-references")
    ap.add_argument("--release-repo", default="okd/okd")
    ap.add_argument("--content-repo", default="okd/okd-content")
    ap.add_argument("--version", default="4.15.0-0.okd-test")
    ap.add_argument("--components", type=int, default=24)
    ap.add_argument("--shared-layers", type=int, default=3)
    ap.add_argument("--shared-kib", type=int, default=256)
    ap.add_argument("--unique-layers", type=int, default=1)
    ap.add_argument("--unique-kib", type=int, default=64)
    ap.add_argument("--multiarch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gzip-level", type=int, default=0, choices=[0, 1])
    ap.add_argument("--push", action="store_true", help="skopeo copy into --registry (plain HTTP)")
    ap.add_argument("--jobs", type=int, default=4, help="parallel skopeo pushes")
    ap.add_argument("--verify", action="store_true",
                    help="after --push, check every manifest by digest with skopeo inspect --raw")
    args = ap.parse_args()
    if args.components < 1 or args.multiarch > args.components or args.multiarch < 0:
        ap.error("need --components >= 1 and 0 <= --multiarch <= --components")
    if os.path.exists(os.path.join(args.layout, "index.json")):
        ap.error(f"{args.layout} already holds an OCI layout; use an empty directory")
    out = build(args)
    if args.push:
        try:
            push(args, out)
        except RuntimeError as e:
            log(f"mkpayload: push failed: {e}")
            sys.exit(1)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
