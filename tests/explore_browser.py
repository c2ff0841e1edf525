"""`charge-spark explore` run as a user runs it, and a real browser to drive it.

`ExploreServer` starts the command in a subprocess on a free port and stops
it; `chrome` opens Debian's chromium through chromedriver (Selenium). Run as a
script, it takes the README's screenshots of the explorer and of a comparison:

    python tests/explore_browser.py --set 'board=S*M' --set health=2 --out docs/explore.png
    python tests/explore_browser.py --set 'board=S*M' --set health=1 --set battery_tiles=2 --set start_battery=0 \
        --set disc_tiles=2 --set bonus_cards=ray,copy --compare cost.counter.disc=1 --out docs/compare.png
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from browser import find_chromium

SRC = Path(__file__).resolve().parents[1] / "src"


def find_chromedriver() -> str | None:
    return shutil.which("chromedriver")


def missing_browser() -> str | None:
    """Why the browser test cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra)"
    if find_chromium() is None:
        return "chromium is not installed (apt-get install -y chromium chromium-driver)"
    if find_chromedriver() is None:
        return "chromedriver is not installed (apt-get install -y chromium-driver)"
    return None


class ExploreServer:
    """`charge-spark explore ARGS --port 0` in a subprocess; `url` once it listens."""

    def __init__(self, args: list[str], timeout: float = 600) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "solver.cli", "explore", *args, "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        self.url = self._wait_for_url(timeout)

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break  # the command ended
            found = re.search(r"http://\S+", line)
            if found:
                return found.group(0)
        self.stop()
        raise RuntimeError(f"explore did not start: {self.process.stderr.read()}")

    def stop(self) -> int:
        """Ctrl-C, as a user stops it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self) -> ExploreServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def chrome(width: int = 1280, height: int = 1000):
    """Headless chromium driven by chromedriver, keeping the page's console messages."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = find_chromium()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-extensions", f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(find_chromedriver()))


def console(driver) -> list[str]:
    """Every console message since the last call (errors, warnings, logs)."""
    return [f"{entry['level']}: {entry['message']}" for entry in driver.get_log("browser")]


def screenshot_page(driver, png: Path, width: int = 1280) -> None:
    """The page shown, shot whole: the viewport set to the page's height first."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": min(height, 6000), "deviceScaleFactor": 1, "mobile": False})
    driver.save_screenshot(str(png))


def main() -> int:
    parser = argparse.ArgumentParser(description="Screenshot the explorer at a position of a rule set's table.")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--position", default="start")
    parser.add_argument("--pair", default="move,move", help="the pair of cards clicked (P1's,P2's) before the shot")
    parser.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE",
                        help="shoot the comparison of the rules with these items added (side b) instead")
    parser.add_argument("--out", type=Path, default=Path("docs/explore.png"))
    args = parser.parse_args()
    reason = missing_browser()
    if reason:
        print(f"cannot take the screenshot: {reason}", file=sys.stderr)
        return 2
    settings = [item for override in args.overrides for item in ("--set", override)]
    with ExploreServer(settings) as server:
        from urllib.parse import urlencode

        from selenium.webdriver.common.by import By

        driver = chrome()
        try:
            if args.compare:
                from selenium.webdriver.support import expected_conditions
                from selenium.webdriver.support.ui import WebDriverWait

                sides = [("a", item) for item in args.overrides] + [("b", item) for item in args.overrides + args.compare]
                driver.get(f"{server.url}compare?{urlencode(sides)}")
                # The progress page looks again by itself until both tables are stored.
                WebDriverWait(driver, 3600).until(expected_conditions.presence_of_element_located((By.ID, "compare")))
            else:
                driver.get(f"{server.url}?{urlencode({'position': args.position})}")
                p1, p2 = args.pair.split(",")
                driver.find_element(By.CSS_SELECTOR, f'a.cell[data-p1="{p1}"][data-p2="{p2}"]').click()
            screenshot_page(driver, args.out)
            problems = console(driver)
        finally:
            driver.quit()
    print(f"wrote {args.out}" + (f"; console: {problems}" if problems else ""))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(SRC))
    sys.exit(main())
