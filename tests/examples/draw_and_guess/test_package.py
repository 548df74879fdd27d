"""Draw-and-Guess as a package: its manifest is its code's, its Surface obeys the CSP rules, it
imports only the SDK and itself, and its signed bundle runs as the top-level `draw_and_guess`."""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from lineup.examples import draw_and_guess as package
from lineup.examples.draw_and_guess import DrawAndGuess
from lineup.examples.draw_and_guess._picture import render
from lineup.examples.draw_and_guess._round import Drawing
from lineup.sdk.bundle import SigningKey, pack, read_header, verify_bundle
from lineup.sdk.manifest import load_manifest, manifest_json
from lineup.sdk.tools import manifest_of

ROOT = Path(package.__file__).parent
WEB = ROOT / "web"


def test_the_shipped_manifest_is_the_one_the_code_declares() -> None:
    shipped = (ROOT / "manifest.json").read_text()
    assert shipped == manifest_json(manifest_of(DrawAndGuess))
    manifest = load_manifest(shipped)
    assert (manifest.app_scope, manifest.version, manifest.kind) == (
        "draw-and-guess",
        "1.0.0",
        "installed",
    )
    assert [(t.method, t.handling) for t in manifest.tools] == [
        ("draw-and-guess.get_drawing", "direct"),
        ("draw-and-guess.guess", "operation"),
        ("draw-and-guess.start_round", "launch"),
    ]
    assert [(e.kind, e.document, e.events) for e in manifest.entrypoints] == [
        ("surface", "index.html", ("stroke.add", "drawing.clear", "round.give_up"))
    ]


def test_the_surface_has_no_inline_script_or_style_loads_nothing_external_and_sets_text_only() -> (
    None
):
    html = (WEB / "index.html").read_text()
    assert re.findall(r"<script\b[^>]*>", html) == [
        '<script src="_lineup/bridge.js">',
        '<script src="app.js">',
    ]
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)
    for name in ("index.html", "app.js", "style.css"):
        text = (WEB / name).read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, name
        assert "@import" not in text and "url(" not in text, name
    script = (WEB / "app.js").read_text()
    for unsafe in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert unsafe not in script, unsafe
    assert sorted(p.name for p in WEB.iterdir()) == ["app.js", "index.html", "style.css"]


def test_the_surface_s_buttons_are_labelled_buttons() -> None:
    html = (WEB / "index.html").read_text()
    buttons = re.findall(r"<button\b[^>]*>", html)
    assert len(buttons) == 2
    for button in buttons:
        assert 'type="button"' in button and "aria-label=" in button
    assert re.search(r'<canvas\b[^>]*tabindex="0"[^>]*aria-label=', html, re.S)


def test_the_package_imports_nothing_of_lineup_but_the_sdk_and_itself_relatively() -> None:
    for path in sorted(ROOT.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                assert top != "draw_and_guess" and not name.startswith("lineup.examples"), path
                if top == "lineup":
                    assert name == "lineup.sdk" or name.startswith("lineup.sdk."), (path, name)


def test_a_busy_drawing_is_scaled_down_until_its_png_fits_the_cap() -> None:
    drawing = Drawing()
    for n in range(6):  # zig-zags over the whole canvas: more than a tiny cap
        points = [v for i in range(30) for v in ((i * 27) % 800, (n * 10 + i * 37) % 600)]
        assert drawing.add({"stroke_id": f"s{n}", "seq": 0, "points": points})
    full = render(drawing)
    assert (full.width, full.height) == (800, 600)
    capped = render(drawing, cap=len(full.png) // 3)
    assert len(capped.png) <= len(full.png) // 3
    assert (capped.width, capped.height) in [(400, 300), (200, 150), (100, 75), (50, 37)]


def test_the_signed_bundle_holds_the_package_and_its_web_files_and_runs_top_level(
    tmp_path: Path,
) -> None:
    key = SigningKey.generate()
    data = pack(ROOT, manifest_of(DrawAndGuess), key, min_host_version="0.1.0")
    bundle = verify_bundle(data, trusted={key.key_id: key.public.key}, host_version="0.1.0")
    assert bundle.package == "draw_and_guess"
    assert {"__init__.py", "_app.py", "_round.py", "_picture.py"} <= set(bundle.files)
    assert {"web/index.html", "web/app.js", "web/style.css"} <= set(bundle.files)
    # As the verified cache holds it: `app/draw_and_guess/…`, with `app/` on the path.
    _, payload = read_header(data)
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        archive.extractall(tmp_path)
    probe = (
        "import json, sys\n"
        "import draw_and_guess\n"
        "from lineup.sdk.tools import manifest_of\n"
        "from lineup.sdk.manifest import manifest_json\n"
        "assert not any(m.startswith('lineup.examples') for m in sys.modules)\n"
        "print(json.dumps(manifest_json(manifest_of(draw_and_guess.DrawAndGuess))))\n"
    )
    env_path = [str(tmp_path / "app"), *sys.path]
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": ":".join(p for p in env_path if p)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == (ROOT / "manifest.json").read_text()
