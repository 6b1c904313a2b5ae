#!/usr/bin/env bash
# The class-scale load runs of issue 16 with the protocol client (bench/load_protocol.py), one after another;
# each writes bench/results/load_protocol_<name>.json. Usage: bench/results/run_protocol_load.sh [NAME ...]
# NAMES: own10 own20 own30 own30_hostile2 nginx1_30 nginx2_30 own30_think2 own40 own30_hostile2_browser
# (default: the first six). own30_hostile2's two hostile sessions speak the protocol too (bench/bench_load_protocol.py);
# own30_hostile2_browser runs them in chromium as before (chromium shares the client's cores with the server).
# EXTRA="--sessions 2 --rounds 1" overrides options (a smoke test of this script).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=bench/results
COMMON=(--client protocol --rounds 3 --max-seconds 150 --action-timeout 60 --ramp 10 --solo 2 --settle 10)

bench() {  # bench NAME ARGS...: one run, its JSON kept
    local name="$1"; shift
    echo "$(date -u +%H:%M:%S) $name: $*" >&2
    python bench/bench_load.py "${COMMON[@]}" "$@" ${EXTRA:-} >"$OUT/load_protocol_$name.json" 2>"/tmp/load_protocol_$name.err" ||
        echo "$name failed: see /tmp/load_protocol_$name.err" >&2
}

behind_nginx() {  # behind_nginx NAME REPLICAS: start scripts/classroom_server.sh, run 30 sessions through it, stop it
    local name="$1" replicas="$2" log run pid
    log="$(mktemp)"
    setsid scripts/classroom_server.sh -n "$replicas" -p 8090 -f 8751 >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q "^run folder:" "$log" && break; sleep 1; done
    run="$(sed -n 's/^run folder: \([^ ]*\).*/\1/p' "$log")"
    if [[ -n "$run" && -s "$run/pids" ]]; then
        # warm every replica with one session of its own first (a fresh server's first concurrent
        # runs can draw a page without its sidebar: measured apart, see the report)
        for ((i = 0; i < replicas; i++)); do
            python bench/bench_load.py --client protocol --url "http://127.0.0.1:$((8751 + i))" --sessions 1 \
                --rounds 1 --solo 0 --settle 0 --uploads-every 0 >/dev/null 2>&1 || echo "warming replica $i failed" >&2
        done
        bench "$name" --sessions 30 --url http://127.0.0.1:8090 --pids "$(paste -sd, "$run/pids")"
    else
        echo "$name: the classroom server did not start: $(cat "$log")" >&2
    fi
    kill "$pid"
    wait "$pid" || true
}

for name in "${@:-own10 own20 own30 own30_hostile2 nginx1_30 nginx2_30}"; do
    for one in $name; do
        case "$one" in
            own10) bench own10 --sessions 10 ;;
            own20) bench own20 --sessions 20 ;;
            own30) bench own30 --sessions 30 ;;
            own30_hostile2) LOAD_HOSTILE_CLIENT=protocol bench own30_hostile2 --sessions 30 --hostile 2 ;;
            own30_hostile2_browser) LOAD_HOSTILE_CLIENT=browser bench own30_hostile2_browser --sessions 30 --hostile 2 ;;
            own30_think2) bench own30_think2 --sessions 30 --think 2 ;;
            own40) bench own40 --sessions 40 ;;
            nginx1_30) behind_nginx nginx1_30 1 ;;
            nginx2_30) behind_nginx nginx2_30 2 ;;
            *) echo "unknown run $one" >&2 ;;
        esac
    done
done
