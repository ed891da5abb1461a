#!/usr/bin/env python3
"""Writes a one-layer OCI image (layout directory and its tar archive) from a root filesystem directory.

No base image is pulled: the layer is the directory as it is. The output is reproducible: entries sorted, owner
root, times set to --epoch, gzip without a name or time. Loadable by podman/skopeo (oci-archive:) and containerd
(`ctr images import`).

usage: oci-image.py ROOTFS LAYOUT_DIR ARCHIVE --ref NAME:TAG --entrypoint PATH --epoch SECONDS
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import time


def add_tree(tar, root, epoch):
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            entries.append(os.path.join(dirpath, name))
    for path in sorted(entries, key=lambda p: os.path.relpath(p, root)):
        info = tar.gettarinfo(path, arcname=os.path.relpath(path, root))
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mtime = epoch
        if info.isreg():
            with open(path, "rb") as f:
                tar.addfile(info, f)
        else:
            tar.addfile(info)


def blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rootfs")
    ap.add_argument("layout")
    ap.add_argument("archive")
    ap.add_argument("--ref", required=True)
    ap.add_argument("--entrypoint", required=True)
    ap.add_argument("--epoch", type=int, default=0)
    a = ap.parse_args()

    shutil.rmtree(a.layout, ignore_errors=True)
    os.makedirs(os.path.join(a.layout, "blobs", "sha256"))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add_tree(tar, a.rootfs, a.epoch)
    layer_tar = raw.getvalue()
    gz = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=gz, mtime=0, compresslevel=9) as z:
        z.write(layer_tar)
    layer_gz = gz.getvalue()
    layer_digest = blob(a.layout, layer_gz)

    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(a.epoch))
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": [a.entrypoint],
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]},
        "history": [{"created": created, "created_by": "hack/image.sh (root filesystem from the built binary)"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": blob(a.layout, config_bytes), "size": len(config_bytes)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest, "size": len(layer_gz)}],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": blob(a.layout, manifest_bytes), "size": len(manifest_bytes),
                       "platform": {"architecture": "amd64", "os": "linux"},
                       "annotations": {"org.opencontainers.image.ref.name": a.ref,
                                       "io.containerd.image.name": a.ref}}],
    }
    with open(os.path.join(a.layout, "index.json"), "w") as f:
        json.dump(index, f, sort_keys=True, separators=(",", ":"))
    with open(os.path.join(a.layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with tarfile.open(a.archive, "w", format=tarfile.PAX_FORMAT) as tar:
        add_tree(tar, a.layout, a.epoch)
    print(json.dumps({"manifest": "sha256:" + hashlib.sha256(manifest_bytes).hexdigest(),
                      "layer_compressed_bytes": len(layer_gz), "layer_bytes": len(layer_tar)}))


if __name__ == "__main__":
    main()
