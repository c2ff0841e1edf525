"""Screenshots of a generated report's sections, for docs/report.md.

    python docs/shoot_report.py REPORT.html [--section price --section cost-curves ...] [--out-dir docs]

Each section (by its id) is shot alone into OUT_DIR/report-<id>.png, in headless Chromium
driven by chromedriver (both must be installed; `.ci/run` installs them where it can).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

SECTIONS = ("price", "cost-curves", "sensitivity", "hidden")
"""The sections a designer reads for "is this card too strong?" and "what does this change do?"."""


def shoot_sections(page: Path, sections: list[str], out_dir: Path, width: int = 1100) -> list[Path]:
    """Shoot each section of `page` named in `sections` into `out_dir`; the files written."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    chromium = next((p for name in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(name))), None)
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        raise RuntimeError("chromium and chromedriver must be installed")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--hide-scrollbars", f"--window-size={width},1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    written = []
    try:
        driver.get(page.resolve().as_uri())
        height = int(driver.execute_script("return document.documentElement.scrollHeight"))
        driver.set_window_size(width, min(height + 200, 16000))
        for section in sections:
            found = driver.find_elements(By.CSS_SELECTOR, f"section#{section}")
            if not found:
                raise RuntimeError(f"{page} has no section '{section}'")
            png = out_dir / f"report-{section}.png"
            found[0].screenshot(str(png))
            written.append(png)
    finally:
        driver.quit()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description="Screenshot sections of a generated report.")
    parser.add_argument("page", type=Path)
    parser.add_argument("--section", action="append", dest="sections", help=f"a section id (default: {', '.join(SECTIONS)})")
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    try:
        for png in shoot_sections(args.page, args.sections or list(SECTIONS), args.out_dir):
            print(f"wrote {png}")
    except RuntimeError as error:
        print(f"cannot take the screenshots: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
