"""Generates the tern.v1 Python gRPC code from proto/ alone (nothing generated is committed).

    /usr/bin/python3 clients/python/generate.py OUT_DIR [PROTO_DIR]

Needs Debian's python3-grpcio and python3-grpc-tools:
    apt-get install -y python3-grpcio python3-grpc-tools
"""
import glob
import os
import sys

from grpc_tools import protoc


def generate(out_dir: str, proto_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    files = sorted(glob.glob(os.path.join(proto_dir, "tern", "v1", "*.proto")))
    if not files:
        raise SystemExit(f"no .proto files under {proto_dir}/tern/v1")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["grpc_tools.protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *files]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    here = os.path.dirname(os.path.abspath(__file__))
    generate(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "proto"))
