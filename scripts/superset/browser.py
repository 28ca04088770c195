"""Headless Chromium on the scripted Superset run's dashboard (run by scripts/superset/run.py
--browser, with Superset's venv Python, which has selenium): log in, load the dashboard N times,
screenshot it, and run a saved SQL Lab query as the analyst with error columns on and screenshot its
result grid (Superset's chart data API keeps only the columns a chart asked for, so a chart's table
drops the ``_moe95`` columns; SQL Lab shows every column the server returns).

A chart does show them when it reads them as columns: with CHART_ID (a Table chart in raw records
mode on a virtual dataset of an aggregate, its ``_moe95`` columns synced with error columns on),
that chart is opened standalone and screenshot too.

    python browser.py BASE_URL DASHBOARD_ID SAVED_QUERY_ID IMAGES_DIR LOADS [CHART_ID]

Debian's chromium and chromium-driver (``apt-get install -y chromium chromium-driver``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--window-size=1400,1000"]


def driver() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def login(d: webdriver.Chrome, base: str) -> None:
    d.get(base + "/login/")
    wait = WebDriverWait(d, 120)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "input#username, input[name=username]")))
    d.find_element(By.CSS_SELECTOR, "input#username, input[name=username]").send_keys("admin")
    d.find_element(By.CSS_SELECTOR, "input#password, input[name=password]").send_keys("admin\n")
    wait.until(lambda x: "/login" not in x.current_url)


def settle(d: webdriver.Chrome, seconds: float = 90) -> int:
    """Wait until no chart is loading (Superset's spinner gone); the number of charts rendered."""
    deadline = time.time() + seconds
    time.sleep(3)
    while time.time() < deadline:
        if not d.find_elements(By.CSS_SELECTOR, ".loading, [data-test=loading-indicator]"):
            break
        time.sleep(1)
    time.sleep(2)
    return len(d.find_elements(By.CSS_SELECTOR, "[data-test=chart-container], .chart-container"))


def main(base: str, dashboard: str, saved_query: str, images: str, loads: str, chart: str = "") -> int:
    out = Path(images)
    out.mkdir(parents=True, exist_ok=True)
    d = driver()
    try:
        login(d, base)
        for i in range(int(loads)):
            d.get(f"{base}/superset/dashboard/{dashboard}/")
            n = settle(d)
            print(f"browser load {i + 1}: {n} chart containers", flush=True)
            if i == 0:
                d.save_screenshot(str(out / "superset_dashboard.png"))
        d.get(f"{base}/sqllab/?savedQueryId={saved_query}")
        settle(d, 30)
        run = [b for b in d.find_elements(By.CSS_SELECTOR, "button") if b.text.strip().startswith("Run")]
        if not run:
            raise SystemExit("SQL Lab: no Run button")
        run[0].click()
        WebDriverWait(d, 120).until(lambda x: x.find_elements(By.CSS_SELECTOR, ".ReactVirtualized__Table__row, "
                                                                                ".ag-row, [role=row]"))
        time.sleep(3)
        d.save_screenshot(str(out / "superset_sqllab_error_columns.png"))
        if chart:
            d.get(f"{base}/explore/?slice_id={chart}&standalone=1")
            WebDriverWait(d, 120).until(lambda x: x.find_elements(By.CSS_SELECTOR, "table tbody tr"))
            settle(d, 30)
            heads = [h.text.strip() for h in d.find_elements(By.CSS_SELECTOR, "table thead th")]
            print(f"chart {chart}: columns {heads}, "
                  f"{len(d.find_elements(By.CSS_SELECTOR, 'table tbody tr'))} rows shown", flush=True)
            d.save_screenshot(str(out / "superset_chart_error_columns.png"))
        print("screenshots written", flush=True)
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
