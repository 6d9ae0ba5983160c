#!/usr/bin/env bash
# etcd-cluster.sh — a throw-away three-member etcd v3 cluster on 127.0.0.1 for
# beacon-fleet's integration tests (Debian's etcd-server/etcd-client 3.4).
#
# CLI:
#   etcd-cluster.sh start DIR          pick free ports, start members 1..3 with data
#                                      dirs under DIR, wait (bounded) until healthy,
#                                      write DIR/endpoints and DIR/member-N.pid
#   etcd-cluster.sh stop DIR           SIGTERM every member (SIGKILL after a bound)
#   etcd-cluster.sh kill DIR N         SIGKILL member N (N = 1, 2 or 3)
#   etcd-cluster.sh restart DIR N      start member N again on its existing data dir
#                                      (--initial-cluster-state existing)
#   etcd-cluster.sh wait-healthy DIR   wait (bounded) until all three members are healthy
#   etcd-cluster.sh compact DIR        compact the keyspace to the current revision
#   etcd-cluster.sh endpoints DIR      print the comma-separated client URLs
#   etcd-cluster.sh endpoint DIR N     print member N's client URL
#
# Sourced (`source etcd-cluster.sh`): defines etcd_cluster_start, etcd_cluster_stop,
# etcd_cluster_kill, etcd_cluster_restart, etcd_cluster_wait_healthy,
# etcd_cluster_compact, etcd_cluster_endpoints, etcd_cluster_endpoint. Each runs in a
# subshell with `set -euo pipefail`, so sourcing does not change the caller's shell
# options and a failure is reported through the return status.
#
# Files in DIR: cluster.env (ports), endpoints, member-N.pid, member-N.log,
# member-N.etcd/ (data dir). `stop` leaves the data dirs; remove DIR yourself.
#
# Timing: members run with --heartbeat-interval=50 (ms) and --election-timeout=500
# (ms) instead of etcd's 100/1000 defaults, so a killed leader is replaced within
# about half a second and fail-over tests stay fast. On a loaded 2-core machine this
# can cause an occasional spurious re-election (harmless: clients retry); raise them
# with ETCD_HEARTBEAT_MS / ETCD_ELECTION_MS (election >= 5 x heartbeat).
#
# Secure mode (ETCD_SECURE=1 at start, remembered in cluster.env): the members serve
# clients over TLS and require a client certificate (--client-cert-auth), and after
# start-up authentication is enabled, with the users root and kiosk (role "fleet":
# read and write below /beacon/). DIR/tls holds ca.pem, client.pem, client-key.pem
# (signed by the CA, CN kiosk) and kiosk.password; this script's own etcdctl calls
# go as root. etcd's simple tokens live in memory: a restarted member forgets them.
#
# Environment knobs:
#   ETCD_SECURE (unset)     ETCD_HEARTBEAT_MS (50)  ETCD_ELECTION_MS (500)
#   ETCD_CLUSTER_TIMEOUT (30)   seconds to wait for health in start/restart/wait-healthy
#   ETCD_STOP_TIMEOUT (10)      seconds to wait for a member to exit after SIGTERM
#   ETCD_BIN, ETCDCTL_BIN       override the binaries (default: etcd, etcdctl on PATH)

export ETCDCTL_API=3

_ec_log() { printf 'etcd-cluster: %s\n' "$*" >&2; }
_ec_die() { _ec_log "error: $*"; exit 1; }

_ec_now_ms() {
    # EPOCHREALTIME is "seconds.microseconds" (bash >= 5).
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}

_ec_ensure_binaries() {
    ETCD_BIN=${ETCD_BIN:-etcd}
    ETCDCTL_BIN=${ETCDCTL_BIN:-etcdctl}
    if command -v "$ETCD_BIN" >/dev/null 2>&1 && command -v "$ETCDCTL_BIN" >/dev/null 2>&1; then
        return 0
    fi
    _ec_log "etcd/etcdctl not found; installing etcd-server etcd-client with apt-get"
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || _ec_die "not root and no sudo: install etcd-server etcd-client"
        sudo=(sudo)
    fi
    if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends \
            etcd-server etcd-client >&2; then
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends \
            etcd-server etcd-client >&2
    fi
    command -v "$ETCD_BIN" >/dev/null 2>&1 || _ec_die "etcd still not on PATH after install"
    command -v "$ETCDCTL_BIN" >/dev/null 2>&1 || _ec_die "etcdctl still not on PATH after install"
}

# True if PID exists and is not a zombie (PID 1 in containers may not reap).
_ec_pid_alive() {
    local pid=$1 state
    [[ -n $pid && -r /proc/$pid/stat ]] || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}

_ec_port_in_use() {
    local port=$1
    if command -v ss >/dev/null 2>&1; then
        # Any socket (listening, TIME_WAIT, ...) bound to the port on any address.
        [[ -n $(ss -Htan "( sport = :$port )" 2>/dev/null) ]]
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
    fi
}

_ec_port_listening() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Picks COUNT distinct free ports in 20000-32767 (below Linux's ephemeral range).
_ec_pick_ports() {
    local count=$1 picked=() port tries=0
    while ((${#picked[@]} < count)); do
        ((tries++ < 1000)) || _ec_die "could not find $count free ports"
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 12768))
        [[ " ${picked[*]} " == *" $port "* ]] && continue
        _ec_port_in_use "$port" && continue
        picked+=("$port")
    done
    echo "${picked[@]}"
}

_ec_load_env() {
    local dir=$1
    [[ -f $dir/cluster.env ]] || _ec_die "$dir/cluster.env not found (was the cluster started with 'start $dir'?)"
    # shellcheck disable=SC1091
    source "$dir/cluster.env"
    if [[ ${SECURE:-0} == 1 ]]; then
        # etcdctl reads its flags from ETCDCTL_* variables.
        export ETCDCTL_CACERT=$dir/tls/ca.pem ETCDCTL_CERT=$dir/tls/root.pem ETCDCTL_KEY=$dir/tls/root-key.pem
        [[ -f $dir/tls/auth-enabled ]] && export ETCDCTL_USER="root:$(<"$dir/tls/root.password")"
    fi
    return 0
}

# A CA, a server certificate for 127.0.0.1, and client certificates for root and kiosk.
_ec_make_certificates() {
    local tls=$1/tls name
    mkdir -p "$tls"
    (
        cd "$tls"
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=beacon-test-ca -keyout ca-key.pem -out ca.pem
        openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server-key.pem -out server.csr
        printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
            -extfile server.ext -out server.pem
        printf 'extendedKeyUsage=clientAuth\n' >client.ext
        for name in root kiosk; do
            openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$name-key.pem" -out "$name.csr"
            openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
                -extfile client.ext -out "$name.pem"
        done
        mv kiosk.pem client.pem
        mv kiosk-key.pem client-key.pem
        openssl rand -hex 12 >root.password
        openssl rand -hex 12 >kiosk.password
    ) >"$tls/openssl.log" 2>&1 || { cat "$tls/openssl.log" >&2; _ec_die "could not make the certificates"; }
}

# Users root and kiosk; kiosk may read and write below /beacon/. Then authentication is on.
_ec_enable_auth() {
    local dir=$1 eps=$2
    _ec_ctl "$eps" user add root --new-user-password "$(<"$dir/tls/root.password")" &&
        _ec_ctl "$eps" user grant-role root root &&
        _ec_ctl "$eps" user add kiosk --new-user-password "$(<"$dir/tls/kiosk.password")" &&
        _ec_ctl "$eps" role add fleet &&
        _ec_ctl "$eps" role grant-permission fleet readwrite --prefix=true /beacon/ &&
        _ec_ctl "$eps" user grant-role kiosk fleet &&
        _ec_ctl "$eps" auth enable &&
        touch "$dir/tls/auth-enabled"
}

_ec_check_member() {
    [[ $1 =~ ^[123]$ ]] || _ec_die "member must be 1, 2 or 3 (got '$1')"
}

_ec_client_url() {
    local v="CLIENT_PORT_$1" scheme=http
    [[ ${SECURE:-0} == 1 ]] && scheme=https
    echo "$scheme://127.0.0.1:${!v}"
}
_ec_peer_url() { local v="PEER_PORT_$1"; echo "http://127.0.0.1:${!v}"; }

_ec_initial_cluster() {
    local n out=()
    for n in 1 2 3; do out+=("m$n=$(_ec_peer_url "$n")"); done
    local IFS=,
    echo "${out[*]}"
}

# Launches member N in the background; STATE is "new" or "existing".
_ec_launch_member() {
    local dir=$1 n=$2 state=$3 pidfile="$1/member-$2.pid"
    if [[ -f $pidfile ]] && _ec_pid_alive "$(<"$pidfile")"; then
        _ec_die "member $n is already running (pid $(<"$pidfile"))"
    fi
    local client peer secure=()
    client=$(_ec_client_url "$n")
    peer=$(_ec_peer_url "$n")
    if [[ ${SECURE:-0} == 1 ]]; then
        secure=(--cert-file "$dir/tls/server.pem" --key-file "$dir/tls/server-key.pem"
            --trusted-ca-file "$dir/tls/ca.pem" --client-cert-auth)
    fi
    # All three standard fds are redirected so that a caller reading our stdout
    # through a pipe (e.g. `$(...)` or Foundation.Process) is not held open by etcd.
    "$ETCD_BIN" \
        --name "m$n" \
        --data-dir "$dir/member-$n.etcd" \
        --listen-client-urls "$client" \
        --advertise-client-urls "$client" \
        --listen-peer-urls "$peer" \
        --initial-advertise-peer-urls "$peer" \
        --initial-cluster "$(_ec_initial_cluster)" \
        --initial-cluster-token "$CLUSTER_TOKEN" \
        --initial-cluster-state "$state" \
        --heartbeat-interval "${ETCD_HEARTBEAT_MS:-50}" \
        --election-timeout "${ETCD_ELECTION_MS:-500}" \
        --logger zap \
        --log-outputs stderr \
        "${secure[@]}" \
        </dev/null >>"$dir/member-$n.log" 2>&1 &
    echo $! >"$pidfile"
}

# Polls CHECK (a command) until it succeeds or the deadline passes. While waiting,
# fails fast if one of the member PIDs given after "--" has exited.
_ec_wait_until() {
    local what=$1 dir=$2 timeout_s=$3; shift 3
    local check=() members=()
    while (($#)) && [[ $1 != -- ]]; do check+=("$1"); shift; done
    (($#)) && shift
    members=("$@")
    local deadline=$(($(_ec_now_ms) + timeout_s * 1000)) n
    while true; do
        if "${check[@]}" >/dev/null 2>&1; then
            return 0
        fi
        for n in "${members[@]}"; do
            if ! _ec_pid_alive "$(cat "$dir/member-$n.pid" 2>/dev/null)"; then
                _ec_log "member $n exited while waiting for $what; last log lines:"
                tail -n 20 "$dir/member-$n.log" >&2 || true
                return 1
            fi
        done
        if (($(_ec_now_ms) >= deadline)); then
            _ec_log "timed out after ${timeout_s}s waiting for $what; last output:"
            "${check[@]}" >&2 || true
            return 1
        fi
        sleep 0.1 # poll interval, bounded by the deadline above
    done
}

_ec_ctl() {
    # _ec_ctl ENDPOINTS ARGS...  (short timeouts: every call is bounded)
    local eps=$1; shift
    "$ETCDCTL_BIN" --endpoints="$eps" --dial-timeout=1s --command-timeout=2s "$@"
}

etcd_cluster_endpoints() (
    set -euo pipefail
    cat "${1:?usage: endpoints DIR}/endpoints"
)

etcd_cluster_endpoint() (
    set -euo pipefail
    local dir=${1:?usage: endpoint DIR N} n=${2:?usage: endpoint DIR N}
    _ec_check_member "$n"
    _ec_load_env "$dir"
    _ec_client_url "$n"
)

etcd_cluster_wait_healthy() (
    set -euo pipefail
    local dir=${1:?usage: wait-healthy DIR [TIMEOUT_S]}
    local timeout_s=${2:-${ETCD_CLUSTER_TIMEOUT:-30}}
    _ec_ensure_binaries
    _ec_load_env "$dir"
    _ec_wait_until "cluster health" "$dir" "$timeout_s" \
        _ec_ctl "$(<"$dir/endpoints")" endpoint health -- 1 2 3
)

etcd_cluster_start() (
    set -euo pipefail
    local dir=${1:?usage: start DIR}
    _ec_ensure_binaries
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    local n
    for n in 1 2 3; do
        if [[ -f $dir/member-$n.pid ]] && _ec_pid_alive "$(<"$dir/member-$n.pid")"; then
            _ec_die "member $n already running in $dir (pid $(<"$dir/member-$n.pid")); stop it first"
        fi
        [[ -e $dir/member-$n.etcd ]] && _ec_die "$dir/member-$n.etcd exists; use an empty DIR"
    done
    local ports_str ports
    ports_str=$(_ec_pick_ports 6)
    read -r -a ports <<<"$ports_str"
    {
        echo "CLIENT_PORT_1=${ports[0]}"
        echo "CLIENT_PORT_2=${ports[1]}"
        echo "CLIENT_PORT_3=${ports[2]}"
        echo "PEER_PORT_1=${ports[3]}"
        echo "PEER_PORT_2=${ports[4]}"
        echo "PEER_PORT_3=${ports[5]}"
        echo "CLUSTER_TOKEN=beacon-test-$$-$RANDOM"
        echo "SECURE=${ETCD_SECURE:-0}"
    } >"$dir/cluster.env"
    [[ ${ETCD_SECURE:-0} == 1 ]] && _ec_make_certificates "$dir"
    _ec_load_env "$dir"
    local eps
    eps="$(_ec_client_url 1),$(_ec_client_url 2),$(_ec_client_url 3)"
    echo "$eps" >"$dir/endpoints"
    for n in 1 2 3; do _ec_launch_member "$dir" "$n" new; done
    if ! _ec_wait_until "cluster health" "$dir" "${ETCD_CLUSTER_TIMEOUT:-30}" \
            _ec_ctl "$eps" endpoint health -- 1 2 3; then
        _ec_log "start failed; stopping members"
        etcd_cluster_stop "$dir" || true
        exit 1
    fi
    if [[ ${SECURE:-0} == 1 ]]; then
        _ec_enable_auth "$dir" "$eps" >/dev/null || {
            etcd_cluster_stop "$dir" || true
            _ec_die "could not enable authentication"
        }
    fi
    _ec_log "cluster healthy: $eps"
    echo "$eps"
)

etcd_cluster_stop() (
    set -euo pipefail
    local dir=${1:?usage: stop DIR} n pid deadline
    # One member at a time: if all get SIGTERM together, the leader tries to hand
    # leadership to a follower that is already gone and hangs for several seconds.
    for n in 1 2 3; do
        [[ -f $dir/member-$n.pid ]] || continue
        pid=$(<"$dir/member-$n.pid")
        if _ec_pid_alive "$pid"; then
            kill -TERM "$pid" 2>/dev/null || true
            deadline=$(($(_ec_now_ms) + ${ETCD_STOP_TIMEOUT:-10} * 1000))
            while _ec_pid_alive "$pid" && (($(_ec_now_ms) < deadline)); do sleep 0.05; done
            if _ec_pid_alive "$pid"; then
                _ec_log "member $n (pid $pid) ignored SIGTERM; sending SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
            fi
        fi
        rm -f "$dir/member-$n.pid"
    done
    _ec_log "stopped cluster in $dir"
)

etcd_cluster_kill() (
    set -euo pipefail
    local dir=${1:?usage: kill DIR N} n=${2:?usage: kill DIR N} pid deadline
    _ec_check_member "$n"
    [[ -f $dir/member-$n.pid ]] || _ec_die "member $n is not running (no $dir/member-$n.pid)"
    pid=$(<"$dir/member-$n.pid")
    if _ec_pid_alive "$pid"; then kill -KILL "$pid"; fi
    deadline=$(($(_ec_now_ms) + 5000))
    while _ec_pid_alive "$pid"; do
        (($(_ec_now_ms) < deadline)) || _ec_die "member $n (pid $pid) still alive after SIGKILL"
        sleep 0.05
    done
    rm -f "$dir/member-$n.pid"
    _ec_log "killed member $n (pid $pid)"
)

etcd_cluster_restart() (
    set -euo pipefail
    local dir=${1:?usage: restart DIR N} n=${2:?usage: restart DIR N} m alive=1 ep
    _ec_check_member "$n"
    _ec_ensure_binaries
    dir=$(cd "$dir" && pwd)
    _ec_load_env "$dir"
    [[ -d $dir/member-$n.etcd ]] || _ec_die "no data dir $dir/member-$n.etcd"
    _ec_launch_member "$dir" "$n" existing
    ep=$(_ec_client_url "$n")
    local port_var="CLIENT_PORT_$n"
    # Listening at all (etcd 3.4 answers no RPC, not even Status, before it has
    # rejoined a quorum, so this is all that can be waited for without one).
    _ec_wait_until "member $n to listen" "$dir" "${ETCD_CLUSTER_TIMEOUT:-30}" \
        _ec_port_listening "${!port_var}" -- "$n"
    for m in 1 2 3; do
        [[ $m == "$n" ]] && continue
        _ec_pid_alive "$(cat "$dir/member-$m.pid" 2>/dev/null)" && alive=$((alive + 1))
    done
    if ((alive >= 2)); then
        # A quorum is up: wait until this member has caught up with a leader.
        _ec_wait_until "member $n health" "$dir" "${ETCD_CLUSTER_TIMEOUT:-30}" \
            _ec_ctl "$ep" endpoint health -- "$n"
        _ec_log "restarted member $n ($ep), healthy"
    else
        _ec_log "restarted member $n ($ep); no quorum yet ($alive of 3 members up), not waiting for health"
    fi
)

etcd_cluster_compact() (
    set -euo pipefail
    local dir=${1:?usage: compact DIR} eps out rev
    _ec_ensure_binaries
    _ec_load_env "$dir"
    eps=$(<"$dir/endpoints")
    # A (linearizable) range answers with the current store revision in its header.
    out=$(_ec_ctl "$eps" get --write-out=json --keys-only --limit=1 beacon-compact-probe)
    rev=$(grep -o '"revision":[0-9]*' <<<"$out" | head -n 1 | cut -d: -f2)
    [[ -n $rev ]] || _ec_die "could not read the current revision from: $out"
    if out=$(_ec_ctl "$eps" compaction --physical "$rev" 2>&1); then
        _ec_log "$out"
    elif [[ $out == *"required revision has been compacted"* ]]; then
        _ec_log "already compacted at revision $rev"
    else
        _ec_die "compaction to $rev failed: $out"
    fi
    echo "$rev"
)

_ec_main() {
    set -euo pipefail
    local cmd=${1:-}
    (($#)) && shift
    case $cmd in
        start) etcd_cluster_start "$@" ;;
        stop) etcd_cluster_stop "$@" ;;
        kill) etcd_cluster_kill "$@" ;;
        restart) etcd_cluster_restart "$@" ;;
        wait-healthy) etcd_cluster_wait_healthy "$@" ;;
        compact) etcd_cluster_compact "$@" ;;
        endpoints) etcd_cluster_endpoints "$@" ;;
        endpoint) etcd_cluster_endpoint "$@" ;;
        *)
            sed -n '5,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
            return 2
            ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    _ec_main "$@"
fi
