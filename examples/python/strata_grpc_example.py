"""Strata from Python over gRPC, with stubs generated from proto/ by grpc_tools.protoc.

Generates the `strata.v1` stubs into a temporary folder (as `python -m grpc_tools.protoc`
would), then through the gateway: puts a key with a request id (sent twice, applied once),
reads it with the raft indexes that created and last changed it, updates it in a
transaction guarded by its mod index (a stale one takes its failure branch), watches the
prefix from the first write's index (a server stream that must replay exactly these
changes), and keeps a lease alive over the bidirectional KeepAlive stream before revoking
it, which deletes the key put under it.

    STRATA_GRPC=127.0.0.1:8080 python3 examples/python/strata_grpc_example.py
(needs grpcio-tools, which ./dev installs into its virtualenv)
"""

import importlib
import os
import pathlib
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc

TARGET = os.environ.get("STRATA_GRPC", "127.0.0.1:8080")
PROTO_ROOT = pathlib.Path(__file__).resolve().parents[2] / "proto"


def generate_stubs():
    """strata/v1/kv_pb2.py and kv_pb2_grpc.py, generated into a temporary folder."""
    out = tempfile.mkdtemp(prefix="strata-grpc-py-")
    include = str(pathlib.Path(protoc.__file__).parent / "_proto")
    rc = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", "strata/v1/kv.proto"])
    if rc != 0:
        raise RuntimeError(f"protoc failed ({rc})")
    sys.path.insert(0, out)
    return importlib.import_module("strata.v1.kv_pb2"), importlib.import_module("strata.v1.kv_pb2_grpc")


def main():
    pb, rpc = generate_stubs()
    channel = grpc.insecure_channel(TARGET)
    kv, leases = rpc.KVStub(channel), rpc.LeaseStub(channel)
    prefix = f"py-grpc-example/{int(time.time() * 1000)}/".encode()
    key = prefix + b"greeting"

    request_id = (prefix + b"req-1").decode()
    first = kv.Put(pb.PutRequest(key=key, value=b"hello", request_id=request_id))
    again = kv.Put(pb.PutRequest(key=key, value=b"hello", request_id=request_id))
    assert again.header.replayed and again.header.index == first.header.index, again
    got = kv.Get(pb.GetRequest(key=key))
    assert got.found and got.value == b"hello" and got.mod_index == first.header.index, got

    def update_if_unchanged(mod_index, value):
        return kv.Txn(pb.TxnRequest(
            compare=[pb.Compare(key=key, op=pb.COMPARE_OP_EQUAL, mod_index=mod_index)],
            success=[pb.TxnOp(put=pb.PutOp(key=key, value=value))],
            failure=[pb.TxnOp(get=pb.GetOp(key=key))]))

    txn = update_if_unchanged(got.mod_index, b"hey")
    assert txn.succeeded, txn
    stale = update_if_unchanged(got.mod_index, b"too late")
    assert not stale.succeeded and stale.results[0].get.kv.value == b"hey", stale

    changes = []
    stream = kv.Watch(pb.WatchRequest(prefix=prefix, from_index=first.header.index,
                                      progress_interval_ms=200), timeout=10)
    for message in stream:
        changes += [(e.index, e.key, e.value) for e in message.events]
        if message.index >= txn.header.index:
            stream.cancel()
            break
    want = [(first.header.index, key, b"hello"), (txn.header.index, key, b"hey")]
    assert changes == want, (changes, want)

    lease = leases.Grant(pb.LeaseGrantRequest(ttl_ms=2000))
    leased = b"py-grpc-example-leased/" + prefix
    kv.Put(pb.PutRequest(key=leased, value=b"online", lease=lease.id))
    kept = 0
    for answer in leases.KeepAlive(iter([pb.LeaseKeepAliveRequest(id=lease.id)] * 3), timeout=10):
        assert answer.ttl_ms == 2000, answer
        kept += 1
    assert kv.Get(pb.GetRequest(key=leased)).lease == lease.id
    revoked = leases.Revoke(pb.LeaseRevokeRequest(id=lease.id))
    assert revoked.keys_deleted == 1, revoked
    assert not kv.Get(pb.GetRequest(key=leased)).found, "the key outlived its lease"
    print(f"python grpc example: ok (put at {first.header.index} once though sent twice, "
          f"updated in a transaction at {txn.header.index}, watch replayed {len(changes)} changes, "
          f"{kept} keep-alives on one stream, the leased key ended with its lease)")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - the example reports any failure and exits non-zero
        print(f"python grpc example: FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
