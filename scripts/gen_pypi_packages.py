"""Write tests/data/pypi_packages.json: the releases PyPI has for every package `ortdoctor explain` may name.

The test tests/test_explain_packages.py checks each package spec explain prints (over the real-text
corpus) against this file, so a fix can never name a package or a version that does not exist. The
names are the packages the compatibility matrix names (CUDA/cuDNN wheels) plus the few others the fixes
use; run this script again when the matrix or a fix names a new one:

    python scripts/gen_pypi_packages.py [EXTRA_NAME ...]

Source: the PyPI JSON API, https://pypi.org/pypi/NAME/json: every release with files, the newest
version and the extras it declares (older releases' extras are the matrix's ``Release.extras``, read from
the wheels). Yanked files count as existing: pip still resolves a pinned one.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.decide.matrix.load import load_matrix  # noqa: E402

OUT = ROOT / "tests" / "data" / "pypi_packages.json"
OTHERS = ("onnxruntime", "onnxruntime-gpu", "numpy", "tensorrt-cu12", "tensorrt-cu13", "nvidia-cublas-cu13",
          "onnxruntime-genai", "onnxruntime-genai-cuda")


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        data: dict[str, object] = json.load(resp)
        return data


def names() -> list[str]:
    m = load_matrix()
    out = set(OTHERS) | set(sys.argv[1:])
    for cuda in m.cuda_majors.values():
        out.update(cuda.wheel_packages)
        out.update(lib.package for lib in cuda.libraries if lib.package)
    for cudnn in m.cudnn_majors.values():
        out.update(cudnn.packages.values())
    return sorted(out)


def main() -> None:
    packages: dict[str, dict[str, object]] = {}
    for name in names():
        data = _get(f"https://pypi.org/pypi/{name}/json")
        releases = data.get("releases")
        versions = sorted(v for v, files in (releases or {}).items() if files) if isinstance(releases, dict) else []
        entry: dict[str, object] = {"versions": versions}
        info = data.get("info")
        if isinstance(info, dict):
            entry["latest"] = info.get("version")
            # provides_extra is often left empty; the extras also show as `extra == "cuda"` markers
            extras = set(info.get("provides_extra") or [])
            extras.update(re.findall(r'extra\s*==\s*"([^"]+)"', " ".join(info.get("requires_dist") or [])))
            entry["latest_extras"] = sorted(extras)
        packages[name] = entry
        print(f"{name}: {len(versions)} releases", file=sys.stderr)
    doc = {
        "source": "https://pypi.org/pypi/NAME/json (PyPI JSON API), written by scripts/gen_pypi_packages.py",
        "date": datetime.date.today().isoformat(),
        "packages": packages,
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
