#!/usr/bin/env python3
"""serve-console.py URL TOKEN RUN: drive lev serve's web console in a real
headless Chromium (Debian's chromium, chromium-driver, python3-selenium).

Logs in with TOKEN, finds RUN's pending approval with the whole call and
the terminal prompt's choices, approves it once, waits for RUN to complete,
opens it and checks that its output, which holds markup and script, is
shown as text: no element it names exists, no script it holds ran.  Prints
one "ok: ..." line a step; any failure raises (exit 1)."""
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

url, token, run = sys.argv[1:4]


def click_row(d, run):
    """Click RUN's row (the table is redrawn each second: retry a stale one)."""
    try:
        d.find_element(By.XPATH, "//tr[@data-run='%s']" % run).click()
        return True
    except Exception:
        return False


opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
          "--user-data-dir=" + os.path.abspath("chromium-profile")):
    opts.add_argument(a)
if os.geteuid() == 0:
    opts.add_argument("--no-sandbox")  # Chromium refuses to run as root with its sandbox
opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
wait = WebDriverWait(drv, 120)
try:
    drv.get(url + "/")
    drv.find_element(By.ID, "token").send_keys(token)
    drv.find_element(By.ID, "login-button").click()
    print("ok: logged in")

    q = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".question")))
    call = q.find_element(By.CSS_SELECTOR, "pre.call").text
    assert "command: echo ran >> ml.txt" in call, call
    labels = [b.text for b in q.find_elements(By.TAG_NAME, "button")]
    assert labels[0] == "Approve once" and labels[-1] == "Deny", labels
    assert any("for this stage" in l for l in labels) and any("for this run" in l for l in labels), labels
    assert run in q.text, q.text
    print("ok: the pending approval shows the whole call and the prompt's choices")

    # open the run: its live events show the question it waits on
    wait.until(lambda d: click_row(d, run))
    wait.until(lambda d: any(li.text.startswith("ask ")
                             for li in d.find_elements(By.CSS_SELECTOR, "#events li")))
    print("ok: the run's live events show its question")

    q.find_element(By.XPATH, ".//button[text()='Approve once']").click()
    row = "//tr[@data-run='%s']/td[3]" % run
    wait.until(lambda d: d.find_element(By.XPATH, row).text == "complete")
    wait.until(lambda d: any(li.text.startswith("end ")
                             for li in d.find_elements(By.CSS_SELECTOR, "#events li")))
    print("ok: approved; the run completed, live")

    wait.until(lambda d: "<script>" in d.find_element(By.ID, "run-output").text)
    out = drv.find_element(By.ID, "run-output").text
    assert '<b id="injected">bold</b>' in out, out
    assert not drv.find_elements(By.ID, "injected"), "the output's markup became an element"
    assert not drv.find_elements(By.CSS_SELECTOR, "#run-output img, #events img, #run-output b")
    assert drv.execute_script("return window.__pwned === undefined"), "a script of the output ran"
    print("ok: the run's markup and script are shown as text, inert")
finally:
    drv.quit()
