"""The classroom proxy: scripts/classroom_server.sh renders deploy/nginx.conf.template into a config
that nginx accepts, keeps each browser on one replica, and passes WebSocket upgrades through."""

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "classroom_server.sh"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
needs_nginx = pytest.mark.skipif(NGINX is None, reason="needs nginx (Debian package nginx-light)")


def render(run_dir: Path, replicas: int = 2, port: int = 8080, first: int = 8601) -> str:
    args = ["bash", str(SCRIPT), "--print-config", "-n", str(replicas), "-p", str(port), "-f", str(first)]
    env = {**os.environ, "RUN_DIR": str(run_dir)}
    return subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout


def nginx_args(run_dir: Path, conf: Path) -> list[str]:
    return [NGINX, "-p", str(run_dir), "-e", str(run_dir / "error.log"), "-c", str(conf)]


def test_the_config_proxies_websockets_to_sticky_replicas(tmp_path):
    text = render(tmp_path, replicas=3, port=9090, first=8701)
    assert "listen 127.0.0.1:9090;" in text
    assert [line.split()[1] for line in text.splitlines() if line.strip().startswith("server 127.")] == [
        "127.0.0.1:8701",
        "127.0.0.1:8702",
        "127.0.0.1:8703",
    ]
    stream = text[text.index("location /_stcore/stream") :]
    stream = stream[: stream.index("}")]
    assert "proxy_http_version 1.1;" in stream
    assert "proxy_set_header Upgrade $http_upgrade;" in stream
    assert "proxy_set_header Connection $connection_upgrade;" in stream
    assert "hash $lab_replica consistent;" in text and "$cookie_lab_replica" in text
    assert "client_max_body_size 200m;" in text  # the app's server.maxUploadSize
    assert "{{" not in text and str(tmp_path) in text


@needs_nginx
def test_nginx_accepts_the_rendered_config(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(render(tmp_path))
    checked = subprocess.run([*nginx_args(tmp_path, conf), "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


def two_free_ports() -> int:
    """A port p with p and p + 1 both free (the script numbers replicas consecutively)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


def echo_backend(port: int) -> http.server.ThreadingHTTPServer:
    """A stand-in replica that answers with its port and the upgrade headers it received."""

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(
                {"port": port, "upgrade": self.headers.get("Upgrade"), "connection": self.headers.get("Connection")}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get(url: str, headers: dict | None = None) -> tuple[dict, str | None]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as reply:
        return json.loads(reply.read()), reply.headers.get("Set-Cookie")


@needs_nginx
def test_each_browser_stays_on_one_replica_and_upgrades_reach_it(tmp_path):
    first, listen = two_free_ports(), two_free_ports()
    while listen in (first, first + 1):
        listen = two_free_ports()
    backends = [echo_backend(first), echo_backend(first + 1)]
    conf = tmp_path / "nginx.conf"
    conf.write_text(render(tmp_path, replicas=2, port=listen, first=first))
    proxy = subprocess.Popen(nginx_args(tmp_path, conf), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{listen}"
        deadline = time.monotonic() + 20
        while True:
            try:
                _, cookie = get(url + "/")
                break
            except OSError:
                assert time.monotonic() < deadline and proxy.poll() is None, proxy.stderr.read()
                time.sleep(0.2)
        assert cookie.startswith("lab_replica=") and "HttpOnly" in cookie
        browser = cookie.split(";")[0]
        seen = {get(url + f"/page{i}", {"Cookie": browser})[0]["port"] for i in range(20)}
        assert len(seen) == 1  # one browser, one replica
        others = {get(url + "/", {"Cookie": f"lab_replica=student{i}"})[0]["port"] for i in range(40)}
        assert others == {first, first + 1}  # different browsers spread over both
        echo, _ = get(url + "/_stcore/stream", {"Cookie": browser, "Upgrade": "websocket", "Connection": "Upgrade"})
        assert echo["port"] in seen and echo["upgrade"] == "websocket" and echo["connection"].lower() == "upgrade"
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        for backend in backends:
            backend.shutdown()


STAND_IN = """#!/usr/bin/env bash
# stands in for python: "-m streamlit run ... --server.port P" serves /_stcore/health on P; anything else is python
if [[ "$1 $2" == "-m streamlit" ]]; then
    while [[ $# -gt 0 && $1 != --server.port ]]; do shift; done
    exec {python} -c 'import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$2"
fi
exec {python} "$@"
"""


def read_until(lines: list[str], stream, needle: str, timeout: float) -> str:
    """Read ``stream`` line by line into ``lines`` until one holds ``needle``; returns that line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if line:
            lines.append(line)
            if needle in line:
                return line
        else:
            time.sleep(0.05)
    raise AssertionError(f"no {needle!r} within {timeout} s in: {''.join(lines)}")


@needs_nginx
def test_the_script_restarts_a_replica_that_dies_while_the_others_keep_serving(tmp_path):
    import sys

    stand_in = tmp_path / "python"
    stand_in.write_text(STAND_IN.format(python=sys.executable))
    stand_in.chmod(0o755)
    first, listen = two_free_ports(), two_free_ports()
    while listen in (first, first + 1):
        listen = two_free_ports()
    env = {**os.environ, "PYTHON": str(stand_in), "TMPDIR": str(tmp_path)}
    args = ["bash", str(SCRIPT), "-n", "2", "-p", str(listen), "-f", str(first)]
    script = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    os.set_blocking(script.stdout.fileno(), False)
    lines: list[str] = []
    try:
        folder = read_until(lines, script.stdout, "run folder:", 60).split("run folder:")[1].split()[0]
        pids = [int(p) for p in Path(folder, "pids").read_text().split()]
        os.kill(pids[0], 9)  # replica 0 crashes mid-class
        said = read_until(lines, script.stdout, "exited with status", 20)
        assert f"replica 0 (port {first}, pid {pids[0]}) exited with status 137" in said and "starting it again" in said
        read_until(lines, script.stdout, f"replica 0 is serving again on port {first}", 20)
        with urllib.request.urlopen(f"http://127.0.0.1:{listen}/_stcore/health", timeout=5) as reply:
            assert reply.status == 200  # nginx still serves
        now = [int(p) for p in Path(folder, "pids").read_text().split()]
        assert now[0] != pids[0] and now[1:] == pids[1:]  # the other replica and nginx untouched
        os.kill(pids[1], 0)  # still alive
    finally:
        script.terminate()
        script.wait(timeout=30)
    rest = script.stdout.read() or ""
    assert "stopped; logs are in" in "".join(lines) + rest
