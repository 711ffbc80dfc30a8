"""The release bootstraps `cargo lambda build --release` made (scripts/test builds them just
before): one per function, each under Lambda's limits once zipped as `sam deploy` uploads it."""

import io
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT_BYTES = 10 * 1024 * 1024


def test_each_function_zips_under_10_mb():
    for function in ["hearth-mcp", "hearth-oauth", "hearth-tts"]:
        bootstrap = ROOT / "target" / "lambda" / function / "bootstrap"
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
            zipped.write(bootstrap, "bootstrap")
        size = archive.getbuffer().nbytes
        print(f"{function}: bootstrap {bootstrap.stat().st_size / 2**20:.2f} MiB, zipped {size / 2**20:.2f} MiB")
        assert 0 < size < LIMIT_BYTES, function
