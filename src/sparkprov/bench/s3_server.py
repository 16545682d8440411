"""An S3 server in this process (moto's, a test dependency), reached through the
environment as the AWS tools reach one: what ``bench trace --object-store`` and the
tests of stores in an object store run against.

>>> with s3_server("doc-bucket") as url:
...     from sparkprov.store.object_store import open_store
...     open_store(f"{url}/lineage").names()
[]
"""

from __future__ import annotations

import contextlib
import logging
import os


@contextlib.contextmanager
def s3_server(bucket: str, env: dict[str, str] | None = None):
    """Start the server, create ``bucket`` and yield ``s3://bucket``, with the AWS
    variables (and ``env``) set in ``os.environ`` until the block ends."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        **(env or {}),
    }
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        boto3.client("s3").create_bucket(Bucket=bucket)
        yield f"s3://{bucket}"
    finally:
        server.stop()
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
