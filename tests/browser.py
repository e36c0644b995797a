"""Headless Chromium for the HTML tests: screenshots, and a probe (a script appended to a copy of the page) that
reads the laid-out page (boxes, computed font sizes, scroll positions) after the page's own script ran, acts on it
(search, clicks) and writes what it saw as JSON into the DOM, which --dump-dom returns."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True, timeout=900)
        if shutil.which("chromium"):
            return shutil.which("chromium")
    pytest.skip(
        "headless Chromium is not installed and cannot be installed here (apt-get install -y chromium needs root)"
    )


def _run(args: list[str], tmp: Path, size: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    r = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def screenshot(page: Path, shot: Path, size: str = "1400,1000", steps: str = "") -> Path:
    """A PNG of `page` as it opens, or after `steps` (JS with PRELUDE's helpers) acted on it."""
    if steps:
        copy = shot.parent / f"shot-{shot.stem}-{page.name}"
        copy.write_text(page.read_text().replace("</body>", _script(steps) + "</body>"))
        page = copy
    _run(["--virtual-time-budget=8000", f"--screenshot={shot}", page.as_uri()], shot.parent, size)
    assert shot.stat().st_size > 20_000  # a real rendering, not a blank page
    return shot


# Helpers the probe steps use: the first graph view, its scroll box, whether an element lies inside the box's
# visible area, and the font size a text element is drawn at on screen (CSS size times the SVG's zoom).
PRELUDE = r"""
var view=document.querySelector('.gview'),box=view&&view.querySelector('.graphbox'),
 svg=view&&view.querySelector('svg.graph');
function inView(el){var r=el.getBoundingClientRect(),b=box.getBoundingClientRect();
 return r.width>0&&r.left>=b.left-1&&r.right<=b.right+1&&r.top>=b.top-1&&r.bottom<=b.bottom+1;}
function onScreen(el){var r=el.getBoundingClientRect();return r.width>0&&r.top>=0&&r.bottom<=window.innerHeight;}
function px(t){return parseFloat(getComputedStyle(t).fontSize)*svg.getScreenCTM().a;}
function rectOf(el){return el.querySelector(':scope > rect.box')||el.querySelector(':scope > rect')||el;}
function selected(){var s=svg.querySelector('.sel');return s?{node:s.dataset.node||null,group:s.dataset.group||null,
 inView:inView(rectOf(s)),panel:view.querySelector('.gpanel .sel').textContent}:null;}
function type(q){var i=view.querySelector('.gsearch');i.value=q;i.dispatchEvent(new Event('input'));}
function labelsInView(){var b=box.getBoundingClientRect(),out=[];svg.querySelectorAll('text').forEach(function(t){
 var r=t.getBoundingClientRect();
 if(r.width&&r.bottom>b.top&&r.top<b.bottom&&r.right>b.left&&r.left<b.right)out.push(px(t));});return out;}
"""


def _script(steps: str) -> str:
    """`steps` run once the page has loaded; what they put in `out` lands in <pre id="probe-out"> (at the page's
    end, out of the way of a screenshot)."""
    return (
        "<script>window.addEventListener('load',function(){setTimeout(function(){var out={};try{"
        + PRELUDE
        + steps
        + "}catch(e){out.error=String(e)+' '+(e.stack||'')}out.jsErrors=window.__npufitErrors||[];"
        "var p=document.createElement('pre');p.id='probe-out';p.textContent=JSON.stringify(out);"
        "document.body.appendChild(p);},0);});</script>"
    )


def probe(page: Path, steps: str, tmp: Path, size: str = "1400,1000") -> dict:
    """Run `steps` (JS statements filling `out`, with PRELUDE's helpers) in a copy of `page` once it has loaded."""
    copy = tmp / f"probe-{page.name}"
    copy.write_text(page.read_text().replace("</body>", _script(steps) + "</body>"))
    r = _run(["--virtual-time-budget=8000", "--dump-dom", copy.as_uri()], tmp, size)
    m = re.search(r'<pre id="probe-out">(.*?)</pre>', r.stdout, re.S)
    assert m, r.stdout[-2000:] + r.stderr[-2000:]
    import html

    out = json.loads(html.unescape(m.group(1)))
    assert "error" not in out, out["error"]
    assert out["jsErrors"] == [], out["jsErrors"]
    return out
