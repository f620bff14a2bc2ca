#!/usr/bin/env python3
"""Dashboard sessions in multi-user mode (docs/dashboard.md#users): loomd as
root with --multi-user, two real accounts that the test creates (useradd,
removed at the end), `loom dash` run as each of them (runuser), and plain
HTTP with each session's cookie and CSRF token (no browser needed).

- A session belongs to the user who ran `loom dash` (SO_PEERCRED when the
  code was issued): /api/session names that user; dash.login's result too.
- The page's actions obey the RPC's rules: a user may cancel their own job
  from the page, not the other's (-32008 naming the owner, the job goes on);
  job.get and /api/log of the other's job are refused, listing is not.
- One user's cookie cannot act as the other: with the other's CSRF token it
  is 403, and whatever it does is done as its own user.
- root's session (an operator) may cancel anyone's job.
- usage.report is one of the page's calls (the Usage view).
- job.logs (`loom logs`) obeys the same rule, and loomd reads no output file
  that is a symbolic link or not the owner's.
- In headless Chromium, the other user's job page shows loomd's permission
  error and no Cancel button; the Usage view has a row per user.

Needs root (useradd, loomd running jobs as their owners); without root it is
skipped, saying so."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.abspath(os.path.join(build_dir(), "loom"))
NODE = "name=n1,cpus=8,memory=8GiB,gpus=2,gpu_type=virtual"
TAG = "%d" % (os.getpid() % 100000)
USER1, USER2 = "loomdash1t" + TAG, "loomdash2t" + TAG
PERMISSION = -32008


def http(method, url, body=None, headers=None):
    """(status, headers, body) without following redirects."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class Session:
    """One browser's worth of dashboard session: its cookie and CSRF token."""

    def __init__(self, base, cookie, csrf):
        self.base, self.cookie, self.csrf = base, cookie, csrf

    def get(self, path):
        return http("GET", self.base + path, headers={"Cookie": self.cookie})

    def rpc(self, method, params=None, csrf=None):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                           "params": params or {}}).encode()
        st, _, out = http("POST", self.base + "/api/rpc", body, {
            "Cookie": self.cookie, "Content-Type": "application/json",
            "X-Loom-CSRF": csrf if csrf is not None else self.csrf})
        return st, (json.loads(out) if st == 200 else out.decode())


@unittest.skipUnless(os.geteuid() == 0, "needs root: creates accounts and runs loomd as root")
class DashUsers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        src = os.environ.get("LOOM_SOURCE_DIR", os.getcwd())
        subprocess.run([os.path.join(src, "scripts", "munge-up.sh")], check=True,
                       capture_output=True)
        cls.pw, cls.work = {}, {}
        for u in (USER1, USER2):
            subprocess.run(["useradd", "-m", "-U", "-s", "/bin/bash", u], check=True,
                           capture_output=True)
            cls.addClassCleanup(cls.remove_user, u)  # runs even if setUpClass fails
            cls.pw[u] = pwd.getpwnam(u)
            w = os.path.join(cls.pw[u].pw_dir, "work")
            os.makedirs(w, exist_ok=True)
            with open(os.path.join(w, "sleep.sh"), "w") as f:
                f.write("#!/bin/bash\necho started by $(id -un)\nsleep 60\n")
            for p in (w, os.path.join(w, "sleep.sh")):
                os.chown(p, cls.pw[u].pw_uid, cls.pw[u].pw_gid)
            os.chmod(cls.pw[u].pw_dir, 0o700)
            cls.work[u] = w
        cls.sockdir = tempfile.mkdtemp(prefix="loom-dashu-sock-")
        cls.addClassCleanup(shutil.rmtree, cls.sockdir, True)
        os.chmod(cls.sockdir, 0o755)
        cls.sock = os.path.join(cls.sockdir, "loomd.sock")
        cls.d = Loomd(extra_args=["--multi-user", "--socket", cls.sock, "--executor", "local",
                                  "--node", NODE, "--grace", "500ms"]).start()

    @staticmethod
    def remove_user(u):
        subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
        subprocess.run(["userdel", "-r", "-f", u], capture_output=True)

    @classmethod
    def tearDownClass(cls):
        try:
            c = cls.d.client()
            for j in c.list_all(state=["PENDING", "RUNNING"]):
                c.cancel(j["id"])
            c.close()
        finally:
            cls.d.cleanup()

    # ------------------------------------------------------------ helpers

    def run_as(self, user, *args):
        """loom ARGS as user (runuser: a real switch of uid, gid and groups),
        in the user's work directory, over the everyone-socket."""
        cmd = (["runuser", "-u", user, "--"] if user else []) + [
            "env", "-i", "PATH=/usr/bin:/bin", "LOOM_URL=unix:" + self.sock, LOOM] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           cwd=self.work[user] if user else self.sockdir)
        return p.returncode, p.stdout, p.stderr

    def login(self, user):
        """`loom dash` as user, its URL opened: the new Session."""
        rc, out, err = self.run_as(user, "dash", "--json")
        self.assertEqual(rc, 0, err)
        res = json.loads(out)
        st, hdr, _ = http("GET", self.d.url + res["path"])
        self.assertEqual(st, 303)
        cookie = hdr["Set-Cookie"].split(";")[0]
        st, _, body = http("GET", self.d.url + "/api/session", headers={"Cookie": cookie})
        self.assertEqual(st, 200)
        info = json.loads(body)
        return Session(self.d.url, cookie, info["csrf"]), res, info

    def submit(self, user, *opts):
        rc, out, err = self.run_as(user, "submit", "--json", *opts, "sleep.sh")
        self.assertEqual(rc, 0, err)
        return json.loads(out)["id"]

    def state(self, jid):
        c = self.d.client()
        try:
            return c.get(jid)["state"]
        finally:
            c.close()

    def wait_state(self, jid, states, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.state(jid)
            if st in states:
                return st
            time.sleep(0.1)
        self.fail("job %d still %s" % (jid, self.state(jid)))

    def assert_denied(self, reply, jid, owner):
        st, body = reply
        self.assertEqual(st, 200, body)
        self.assertEqual(body["error"]["code"], PERMISSION, body)
        self.assertEqual(body["error"]["message"],
                         "permission denied: job %d belongs to another user (%s)" % (jid, owner))
        self.assertEqual(body["error"]["data"], {"id": jid, "owner": owner})

    # -------------------------------------------------------------- tests

    def test_sessions_bound_to_their_users(self):
        s1, res1, info1 = self.login(USER1)
        s2, res2, info2 = self.login(USER2)
        for u, res, info in ((USER1, res1, info1), (USER2, res2, info2)):
            uid = self.pw[u].pw_uid
            self.assertEqual(res["who"], "%s (uid %d)" % (u, uid))
            self.assertEqual(info["who"], res["who"])
            self.assertEqual(info["user"], {"name": u, "uid": uid, "operator": False})
        self.assertNotEqual(s1.cookie, s2.cookie)
        self.assertNotEqual(s1.csrf, s2.csrf)
        # server.info through the page names the session's user as the caller.
        for s, u in ((s1, USER1), (s2, USER2)):
            st, body = s.rpc("server.info")
            self.assertEqual(st, 200, body)
            self.assertEqual(body["result"]["auth"]["caller"]["user"], u)
            self.assertEqual(body["result"]["auth"]["caller"]["scheme"], "peer")

    def test_page_actions_obey_the_owner_rule(self):
        s1, _, _ = self.login(USER1)
        s2, _, _ = self.login(USER2)
        j1, j2 = self.submit(USER1), self.submit(USER2)
        self.wait_state(j1, ("RUNNING",))
        # Everyone lists both, with their owners.
        st, body = s2.rpc("job.list", {"state": ["PENDING", "RUNNING"]})
        owners = {j["id"]: j["owner"]["user"] for j in body["result"]["jobs"]}
        self.assertEqual(owners.get(j1), USER1, body)
        self.assertEqual(owners.get(j2), USER2, body)
        # The other's job: neither cancelled, nor read, nor its output.
        self.assert_denied(s2.rpc("job.cancel", {"id": j1, "reason": "from the page"}), j1, USER1)
        self.assert_denied(s2.rpc("job.get", {"id": j1}), j1, USER1)
        st, _, body = s2.get("/api/log?id=%d&offset=0" % j1)
        self.assertEqual(st, 403, body)
        self.assertIn(b"permission denied: job %d belongs to another user (%s)" %
                      (j1, USER1.encode()), body)
        self.assertEqual(self.state(j1), "RUNNING")
        # One's cookie with the other's CSRF token: refused before anything runs.
        st, body = s2.rpc("job.cancel", {"id": j2}, csrf=s1.csrf)
        self.assertEqual(st, 403, body)
        self.assertIn(self.state(j2), ("PENDING", "RUNNING"))
        # The owner reads their job and its output (opened as that user) ...
        st, body = s1.rpc("job.get", {"id": j1})
        self.assertEqual(body["result"]["job"]["id"], j1, body)
        deadline = time.monotonic() + 20
        while True:
            st, _, body = s1.get("/api/log?id=%d&offset=0" % j1)
            self.assertEqual(st, 200, body)
            log = json.loads(body)
            if "started by" in log.get("data", "") or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(log["data"], "started by %s\n" % USER1, log)
        # ... and cancels it from the page.
        st, body = s1.rpc("job.cancel", {"id": j1, "reason": "cancelled from the dashboard"})
        self.assertEqual(st, 200, body)
        self.assertNotIn("error", body)
        self.assertEqual(self.wait_state(j1, ("CANCELLED",)), "CANCELLED")
        # The first user's session cannot cancel the second's job either.
        self.assert_denied(s1.rpc("job.cancel", {"id": j2}), j2, USER2)
        self.assertIn(self.state(j2), ("PENDING", "RUNNING"))
        # root (an operator) may, from its own session.
        s0, res0, info0 = self.login(None)
        self.assertEqual(info0["user"], {"name": "root", "uid": 0, "operator": True})
        self.assertEqual(res0["who"], "root (uid 0), operator")
        st, body = s0.rpc("job.cancel", {"id": j2, "reason": "operator"})
        self.assertNotIn("error", body)
        self.assertEqual(self.wait_state(j2, ("CANCELLED",)), "CANCELLED")

    def test_usage_report_from_the_page(self):
        s1, _, _ = self.login(USER1)
        j = self.submit(USER1)
        self.wait_state(j, ("RUNNING",))
        st, body = s1.rpc("usage.report", {})
        self.assertEqual(st, 200, body)
        rows = [r for r in body["result"]["rows"] if r["user"] == USER1]
        self.assertEqual(len(rows), 1, body)
        self.assertGreaterEqual(rows[0]["jobs"], 1)
        st, body = s1.rpc("usage.report", {"user": 5})
        self.assertEqual(body["error"]["code"], -32602, body)
        s1.rpc("job.cancel", {"id": j})
        self.wait_state(j, ("CANCELLED",))

    def test_browser_shows_the_permission_error(self):
        """In headless Chromium, the second user's page: the first user's job
        is listed with its owner, its page shows loomd's permission error;
        the Usage view has a row per user. Screenshots: dash-job-denied.png,
        dash-usage-users.png in $LOOM_DASH_SHOTS (docs/figures was made so), else a temporary
        directory."""
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.support.ui import WebDriverWait
        j1 = self.submit(USER1, "--gpus", "1")
        j2 = self.submit(USER2, "--gpus", "1")
        self.wait_state(j1, ("RUNNING",))
        self.wait_state(j2, ("RUNNING",))
        time.sleep(2)  # some GPU time for the usage view
        work = tempfile.mkdtemp(prefix="loom-dashu-b-")
        shots = os.environ.get("LOOM_DASH_SHOTS") or work
        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium")
        for a in ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,700",
                  "--user-data-dir=" + os.path.join(work, "profile")]:
            opts.add_argument(a)
        b = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
        text = ("const e = document.querySelector(arguments[0]); "
                "return e ? e.innerText : ''")

        def wait(cond, what):
            WebDriverWait(b, 30, poll_frequency=0.1).until(lambda _: cond(),
                                                           message="waiting for " + what)
        try:
            rc, out, err = self.run_as(USER2, "dash")
            self.assertEqual(rc, 0, err)
            b.get([w for w in out.split() if w.startswith("http://")][0])
            wait(lambda: USER2 in b.execute_script(text, "#who"), "the session's user")
            b.execute_script("location.hash = '#/queue'")
            wait(lambda: b.execute_script("return !!document.querySelector('#jobs')"),
                 "the queue's first page")
            wait(lambda: b.execute_script(
                "const e = document.querySelector('[data-tab=\"running\"]');"
                "if (e) e.click(); return !!e;"), "the running tab")
            row = '#jobs tr[data-id="%d"]' % j1
            wait(lambda: USER1 in b.execute_script(text, row), "the other's job and its owner")
            b.execute_script("location.hash = arguments[0]", "#/job/%d" % j1)
            denied = "permission denied: job %d belongs to another user (%s)" % (j1, USER1)
            wait(lambda: denied in b.execute_script(text, "#denied"), "the permission error")
            self.assertEqual(b.execute_script("return document.querySelector('#cancel')"), None)
            b.save_screenshot(os.path.join(shots, "dash-job-denied.png"))
            b.execute_script("location.hash = '#/usage'")
            wait(lambda: b.execute_script(text, '#usage tr[data-user="%s"]' % USER1)
                 and b.execute_script(text, '#usage tr[data-user="%s"]' % USER2),
                 "a usage row per user")
            b.execute_script("document.querySelector('#error').hidden = true")  # the job's toast
            b.save_screenshot(os.path.join(shots, "dash-usage-users.png"))
            self.assertEqual(self.state(j1), "RUNNING")
        finally:
            b.quit()
            shutil.rmtree(work, ignore_errors=True)
            c = self.d.client()
            for j in (j1, j2):
                c.cancel(j)
            c.close()

    def test_job_logs_obey_the_owner_rule(self):
        """job.logs (`loom logs`), which the page's log tail mirrors: the
        other user gets -32008 (CLI exit 6); the owner reads the output; an
        output file replaced by a symbolic link (to a file the owner may not
        read) is refused, not read by loomd as root."""
        with open(os.path.join(self.work[USER1], "hello.sh"), "w") as f:
            f.write("#!/bin/bash\necho hello from $(id -un)\n")
        rc, out, err = self.run_as(USER1, "submit", "--json", "hello.sh")
        self.assertEqual(rc, 0, err)
        jid = json.loads(out)["id"]
        self.wait_state(jid, ("COMPLETED",))
        rc, out, err = self.run_as(USER2, "logs", str(jid))
        self.assertEqual(rc, 6, (out, err))
        self.assertIn("permission denied: job %d belongs to another user (%s)" % (jid, USER1), err)
        rc, out, err = self.run_as(USER1, "logs", str(jid))
        self.assertEqual((rc, out), (0, "hello from %s\n" % USER1), err)
        log = os.path.join(self.work[USER1], "loom-%d.out" % jid)
        subprocess.run(["runuser", "-u", USER1, "--", "ln", "-sf", "/etc/shadow", log], check=True)
        rc, out, err = self.run_as(USER1, "logs", str(jid))
        self.assertEqual(rc, 6, (out, err))
        self.assertIn("is not a regular file of the job's owner; refused", err)
        self.assertNotIn("root:", out)
        # root (an operator) still may not make loomd read through the link
        rc, out, err = self.run_as(None, "logs", str(jid))
        self.assertNotIn("root:", out)
        self.assertEqual(rc, 6, (out, err))
        # nor the dashboard's tail, for the owner's session or an operator's
        for user in (USER1, None):
            sess, _, _ = self.login(user)
            st, _, body = sess.get("/api/log?id=%d&offset=0" % jid)
            self.assertEqual(st, 200, body)
            tail = json.loads(body)
            self.assertNotIn("data", tail, tail)
            self.assertIn("error", tail)
            self.assertNotIn(b"root:", body)

    def test_session_needs_a_live_code(self):
        _, res, _ = self.login(USER1)
        st, _, body = http("GET", self.d.url + res["path"])  # used once already
        self.assertEqual(st, 403, body)
        st, _, _ = http("GET", self.d.url + "/api/session")
        self.assertEqual(st, 401)


if __name__ == "__main__":
    unittest.main(verbosity=2)
