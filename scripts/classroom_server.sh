#!/usr/bin/env bash
# Serve Attention Lab to a whole class: N Streamlit replicas on 127.0.0.1 behind nginx with sticky
# sessions (deploy/nginx.conf.template). A replica that exits is started again on its port while the others
# keep serving (the script prints what happened). Ctrl-C stops everything.
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
# "pids" (replica and nginx process ids, for bench/bench_load.py --pids; rewritten after a restart) are in the
# run folder it prints.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPLATE="$ROOT/deploy/nginx.conf.template"
REPLICAS="$(nproc 2>/dev/null || echo 2)"
PORT=8080
ADDRESS=127.0.0.1
FIRST=8601
PRINT_ONLY=0
PYTHON="${PYTHON:-python}"

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

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
REPLICA_PIDS=()
NGINX_PID=""
STOPPING=0
stop_all() {
    trap - INT TERM EXIT
    STOPPING=1
    echo "stopping…"
    for pid in "${REPLICA_PIDS[@]}" $NGINX_PID; do kill "$pid" 2>/dev/null || true; done
    for pid in "${REPLICA_PIDS[@]}" $NGINX_PID; do wait "$pid" 2>/dev/null || true; done
    echo "stopped; logs are in $RUN_DIR"
}
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT

SECRET="${ATTENTION_LAB_COOKIE_SECRET:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')}"
cd "$ROOT"

start_replica() {  # start_replica I: replica I on port FIRST+I (its log appended to), its pid in REPLICA_PIDS[I]
    local i=$1
    # ATTENTION_LAB_LISTEN: the address students reach (nginx's), for the join address the projector shows
    STREAMLIT_SERVER_COOKIE_SECRET="$SECRET" ATTENTION_LAB_THREADS=1 ATTENTION_LAB_LISTEN="$ADDRESS" \
        "$PYTHON" -m streamlit run streamlit_app.py --server.headless true --server.port "$((FIRST + i))" \
        --server.address 127.0.0.1 --server.fileWatcherType none --browser.gatherUsageStats false \
        >>"$RUN_DIR/replica-$i.log" 2>&1 &
    REPLICA_PIDS[i]=$!
    STARTED[i]=$SECONDS
}

healthy() {  # healthy PORT [WAIT_S]: whether the replica on PORT answers its health check (within WAIT_S)
    "$PYTHON" - "$1" "${2:-1}" <<'PY'
import sys, time, urllib.request
port, wait = int(sys.argv[1]), float(sys.argv[2])
deadline = time.monotonic() + wait
while True:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as reply:
            sys.exit(0 if reply.status == 200 else 1)
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(1)
        time.sleep(0.5)
PY
}

start_nginx() {
    "$NGINX" -p "$RUN_DIR" -e "$RUN_DIR/error.log" -c "$RUN_DIR/nginx.conf" &
    NGINX_PID=$!
}

write_pids() { printf '%s\n' "${REPLICA_PIDS[@]}" "$NGINX_PID" >"$RUN_DIR/pids"; }

say() { echo "$(date +%H:%M:%S) $*"; }

declare -a STARTED FAILS WAITING
for ((i = 0; i < REPLICAS; i++)); do
    start_replica "$i"
    FAILS[i]=0
    WAITING[i]=0
done

echo "waiting for $REPLICAS replicas (ports $FIRST–$((FIRST + REPLICAS - 1)))…"
for ((i = 0; i < REPLICAS; i++)); do
    healthy "$((FIRST + i))" 300 || { echo "replica on port $((FIRST + i)) did not start: see $RUN_DIR/replica-$i.log" >&2; exit 1; }
done

render_config "$RUN_DIR" >"$RUN_DIR/nginx.conf"
"$NGINX" -t -q -p "$RUN_DIR" -e "$RUN_DIR/error.log" -c "$RUN_DIR/nginx.conf"
start_nginx
write_pids

echo "Attention Lab for the class: http://$ADDRESS:$PORT  ($REPLICAS replicas; Ctrl-C stops all)"
echo "run folder: $RUN_DIR   load test: python bench/bench_load.py --url http://127.0.0.1:$PORT --pids $(paste -sd, "$RUN_DIR/pids")"

# Supervise: a replica that exits is started again on its port while the others keep serving (a class's answers
# are in the store; its students' browsers reconnect by themselves); nginx likewise. A replica that fails
# GIVE_UP times in a row within FAST_S of its start is left down, and the script says so.
GIVE_UP=3
FAST_S=30
while [[ $STOPPING == 0 ]]; do
    sleep 1
    for ((i = 0; i < REPLICAS; i++)); do
        pid=${REPLICA_PIDS[i]}
        [[ -n $pid ]] || continue
        if kill -0 "$pid" 2>/dev/null; then
            if [[ ${WAITING[i]} == 1 ]] && healthy "$((FIRST + i))"; then
                WAITING[i]=0
                say "replica $i is serving again on port $((FIRST + i)) (pid $pid)"
            fi
            continue
        fi
        status=0
        wait "$pid" 2>/dev/null || status=$?
        ran=$((SECONDS - STARTED[i]))
        if ((ran < FAST_S)); then FAILS[i]=$((FAILS[i] + 1)); else FAILS[i]=1; fi
        if ((FAILS[i] >= GIVE_UP)); then
            say "replica $i (port $((FIRST + i))) exited with status $status ${FAILS[i]} times in a row, each within ${FAST_S} s of its start: left down (see $RUN_DIR/replica-$i.log); the other replicas keep serving" >&2
            REPLICA_PIDS[i]=""
            write_pids
            continue
        fi
        say "replica $i (port $((FIRST + i)), pid $pid) exited with status $status after ${ran} s; starting it again on port $((FIRST + i)) (the other replicas keep serving; its students reconnect when it is back)" >&2
        start_replica "$i"
        WAITING[i]=1
        write_pids
    done
    if ! kill -0 "$NGINX_PID" 2>/dev/null; then
        status=0
        wait "$NGINX_PID" 2>/dev/null || status=$?
        say "nginx (pid $NGINX_PID) exited with status $status; starting it again" >&2
        start_nginx
        write_pids
    fi
done
