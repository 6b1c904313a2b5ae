#!/usr/bin/env bash
# Serve Attention Lab to a whole class: N Streamlit replicas on 127.0.0.1 behind nginx with sticky
# sessions (deploy/nginx.conf.template). Ctrl-C stops everything.
#
#   scripts/classroom_server.sh [-n REPLICAS] [-p PORT] [-a ADDRESS] [-f FIRST_REPLICA_PORT]
#   scripts/classroom_server.sh --print-config [-n ...]   # print the rendered nginx.conf and exit
#
#   -n  replicas (default: one per CPU core)      -p  nginx port (default 8080)
#   -a  nginx address (default 127.0.0.1; 0.0.0.0 lets students' laptops on the network connect)
#   -f  port of the first replica (default 8601; the others follow)
#
# All replicas share one server.cookieSecret (random per start, or $ATTENTION_LAB_COOKIE_SECRET),
# passed in the environment rather than on the command line. Logs, the rendered config and a file
# "pids" (replica and nginx process ids, for bench/bench_load.py --pids) are in the run folder it prints.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPLATE="$ROOT/deploy/nginx.conf.template"
REPLICAS="$(nproc 2>/dev/null || echo 2)"
PORT=8080
ADDRESS=127.0.0.1
FIRST=8601
PRINT_ONLY=0
PYTHON="${PYTHON:-python}"

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        -n) REPLICAS="$2"; shift 2 ;;
        -p) PORT="$2"; shift 2 ;;
        -a) ADDRESS="$2"; shift 2 ;;
        -f) FIRST="$2"; shift 2 ;;
        --print-config) PRINT_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ "$REPLICAS" =~ ^[1-9][0-9]*$ ]] || { echo "-n needs a positive number" >&2; exit 2; }

render_config() {  # render_config RUN_DIR: the template with its fields filled in, on stdout
    local servers="" i
    for ((i = 0; i < REPLICAS; i++)); do
        servers+="        server 127.0.0.1:$((FIRST + i)) max_fails=0;"$'\n'
    done
    "$PYTHON" - "$TEMPLATE" "$1" "$ADDRESS:$PORT" "${servers%$'\n'}" <<'PY'
import sys
template, run_dir, listen, servers = sys.argv[1:5]
text = open(template, encoding="utf-8").read()
print(text.replace("{{RUN_DIR}}", run_dir).replace("{{LISTEN}}", listen).replace("{{SERVERS}}", servers), end="")
PY
}

if [[ $PRINT_ONLY == 1 ]]; then
    render_config "${RUN_DIR:-/tmp/attention-lab-class}"
    exit 0
fi

if ! command -v nginx >/dev/null 2>&1 && [[ ! -x /usr/sbin/nginx ]]; then
    if [[ $(id -u) == 0 ]]; then
        echo "installing nginx (Debian package)…"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null
        systemctl disable --now nginx >/dev/null 2>&1 || true  # only our own nginx is wanted
    else
        echo "nginx is not installed: run 'sudo apt-get install nginx-light' (or this script as root)" >&2
        exit 1
    fi
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/attention-lab-class.XXXXXX")"
PIDS=()
STOPPING=0
stop_all() {
    trap - INT TERM EXIT
    STOPPING=1
    echo "stopping…"
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    echo "stopped; logs are in $RUN_DIR"
}
trap stop_all INT TERM EXIT

SECRET="${ATTENTION_LAB_COOKIE_SECRET:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')}"
cd "$ROOT"
for ((i = 0; i < REPLICAS; i++)); do
    port=$((FIRST + i))
    STREAMLIT_SERVER_COOKIE_SECRET="$SECRET" ATTENTION_LAB_THREADS=1 \
        "$PYTHON" -m streamlit run streamlit_app.py --server.headless true --server.port "$port" \
        --server.address 127.0.0.1 --server.fileWatcherType none --browser.gatherUsageStats false \
        >"$RUN_DIR/replica-$i.log" 2>&1 &
    PIDS+=("$!")
done

echo "waiting for $REPLICAS replicas (ports $FIRST–$((FIRST + REPLICAS - 1)))…"
"$PYTHON" - "$FIRST" "$REPLICAS" <<'PY'
import sys, time, urllib.request
first, count = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 300
for port in range(first, first + count):
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"replica on port {port} did not start: see its log")
            time.sleep(0.5)
PY

render_config "$RUN_DIR" >"$RUN_DIR/nginx.conf"
"$NGINX" -t -q -p "$RUN_DIR" -e "$RUN_DIR/error.log" -c "$RUN_DIR/nginx.conf"
"$NGINX" -p "$RUN_DIR" -e "$RUN_DIR/error.log" -c "$RUN_DIR/nginx.conf" &
PIDS+=("$!")
printf '%s\n' "${PIDS[@]}" >"$RUN_DIR/pids"

echo "Attention Lab for the class: http://$ADDRESS:$PORT  ($REPLICAS replicas; Ctrl-C stops all)"
echo "run folder: $RUN_DIR   load test: python bench/bench_load.py --url http://127.0.0.1:$PORT --pids $(paste -sd, "$RUN_DIR/pids")"
wait -n "${PIDS[@]}" || true
[[ $STOPPING == 1 ]] || echo "a process ended: stopping the others" >&2
