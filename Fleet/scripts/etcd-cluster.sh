#!/usr/bin/env bash
# etcd-cluster.sh — a throw-away three-member etcd v3 cluster on 127.0.0.1 for
# beacon-fleet's integration tests (Debian's etcd-server/etcd-client 3.4).
#
# CLI:
#   etcd-cluster.sh start DIR          pick free ports, start members 1..3 with data
#                                      dirs under DIR, wait (bounded) until healthy,
#                                      write DIR/endpoints and DIR/member-N.pid
#   etcd-cluster.sh stop DIR           SIGTERM every member (SIGKILL after a bound);
#                                      in netns mode also delete namespaces, veths, bridge
#   etcd-cluster.sh kill DIR N         SIGKILL member N (N = 1, 2 or 3)
#   etcd-cluster.sh restart DIR N      start member N again on its existing data dir
#                                      (--initial-cluster-state existing)
#   etcd-cluster.sh wait-healthy DIR   wait (bounded) until all three members are healthy
#   etcd-cluster.sh compact DIR        compact the keyspace to the current revision
#   etcd-cluster.sh endpoints DIR      print the comma-separated client URLs
#   etcd-cluster.sh endpoint DIR N     print member N's client URL
#   etcd-cluster.sh pause DIR N        SIGSTOP member N (it keeps its sockets, answers nothing)
#   etcd-cluster.sh resume DIR N       SIGCONT member N
#   etcd-cluster.sh leader DIR [S]     wait (bounded: S or ETCD_CLUSTER_TIMEOUT seconds) until
#                                      two members' `etcdctl endpoint status` name the same
#                                      leader in the same term; print its number N
#   etcd-cluster.sh isolate DIR N      netns mode: drop all packets between member N and
#                                      the other members; clients still reach N
#   etcd-cluster.sh cut DIR N          netns mode: drop all packets to and from member N,
#                                      clients' included
#   etcd-cluster.sh oneway DIR N       netns mode: drop the packets member N sends to the
#                                      other members (N hears them, they do not hear N)
#   etcd-cluster.sh heal DIR [N]       netns mode: remove isolate/cut/oneway from member N
#                                      (default: from every member)
#
# Sourced (`source etcd-cluster.sh`): defines etcd_cluster_start, etcd_cluster_stop,
# etcd_cluster_kill, etcd_cluster_restart, etcd_cluster_wait_healthy,
# etcd_cluster_compact, etcd_cluster_endpoints, etcd_cluster_endpoint,
# etcd_cluster_pause, etcd_cluster_resume, etcd_cluster_leader, etcd_cluster_isolate,
# etcd_cluster_cut, etcd_cluster_oneway, etcd_cluster_heal. Each runs in a
# subshell with `set -euo pipefail`, so sourcing does not change the caller's shell
# options and a failure is reported through the return status.
#
# Files in DIR: cluster.env (ports), endpoints, member-N.pid, member-N.log,
# member-N.etcd/ (data dir), in netns mode fault-N (the fault set on member N).
# `stop` leaves the data dirs; remove DIR yourself.
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
# Network-namespace mode (ETCD_NETNS=1 at start, remembered in cluster.env; needs
# root, installs iproute2 and nftables with apt-get if missing): member N runs (with
# `ip netns exec`, so DIR/member-N.pid is etcd's own pid) in the network namespace
# bec-H-N, H = 8 hex digits of sha256(DIR's absolute path). Its eth0 is one end of a
# veth pair whose other end, bec-H-vN, is a port of the bridge bec-H in the root
# namespace. The /24 10.A.B.0 is derived from H (the next free one if it is in use on
# the machine); the bridge has .1, member N .(10+N), and each member serves clients on
# :2379 and peers on :2380 of its own address, so processes in the root namespace reach
# every member through the bridge, and the members reach each other only through it.
# Faults are nftables rules (table inet beacon_fault) inside the member's namespace:
# the packets are dropped silently (no RST, no ICMP), so peers and clients see
# timeouts, not refusals. One fault per member: a new one replaces the old. A member
# cut off from the others campaigns in ever higher terms (etcd 3.4 runs without
# pre-vote), so healing it forces an election. `oneway` is one-way for packets only:
# the peers talk TCP, so once N's ACKs are missing the others' sends to N stall, and
# within about a second N hears nobody either. If bridged packets are lost to the root
# namespace's forward rules (bridge-nf-call-iptables=1), `start` sets that sysctl to 0.
# `start` first removes the namespaces, veths and bridge an earlier run on the same DIR
# left (killing what still runs in them); `stop` removes them, also after a partial start.
#
# Environment knobs:
#   ETCD_SECURE (unset)     ETCD_HEARTBEAT_MS (50)  ETCD_ELECTION_MS (500)
#   ETCD_NETNS (unset)          1 at start: network-namespace mode (see above)
#   ETCD_CLUSTER_TIMEOUT (30)   seconds to wait for health in start/restart/wait-healthy
#                               and for an agreed leader in `leader`
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
    _ec_apt_install etcd-server etcd-client
    command -v "$ETCD_BIN" >/dev/null 2>&1 || _ec_die "etcd still not on PATH after install"
    command -v "$ETCDCTL_BIN" >/dev/null 2>&1 || _ec_die "etcdctl still not on PATH after install"
}

# apt-get install PACKAGES (with sudo if not root), after an `apt-get update` if needed.
_ec_apt_install() {
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || _ec_die "not root and no sudo: install $*"
        sudo=(sudo)
    fi
    if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends \
            "$@" >&2; then
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends \
            "$@" >&2
    fi
}

# Network-namespace mode needs root, `ip` (iproute2) and `nft` (nftables).
_ec_ensure_netns_tools() {
    [[ $(id -u) -eq 0 ]] || _ec_die "network-namespace mode (ETCD_NETNS=1) needs root"
    local pkgs=()
    command -v ip >/dev/null 2>&1 || pkgs+=(iproute2)
    command -v nft >/dev/null 2>&1 || pkgs+=(nftables)
    command -v timeout >/dev/null 2>&1 || _ec_die "timeout (coreutils) not found"
    if ((${#pkgs[@]})); then
        _ec_log "installing ${pkgs[*]} with apt-get for network-namespace mode"
        _ec_apt_install "${pkgs[@]}"
    fi
    command -v ip >/dev/null 2>&1 || _ec_die "ip still not on PATH after install"
    command -v nft >/dev/null 2>&1 || _ec_die "nft still not on PATH after install"
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

# A CA, a server certificate for 127.0.0.1 (and the IP addresses given after DIR), and
# client certificates for root and kiosk.
_ec_make_certificates() {
    local tls=$1/tls name ip san=IP:127.0.0.1
    shift
    for ip in "$@"; do san+=",IP:$ip"; done
    mkdir -p "$tls"
    (
        cd "$tls"
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=beacon-test-ca -keyout ca-key.pem -out ca.pem
        openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server-key.pem -out server.csr
        printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >server.ext
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

# Member N's IP address: 127.0.0.1, or in netns mode its namespace's address.
_ec_host() {
    if [[ ${NETNS:-0} == 1 ]]; then echo "$NETNS_NET.$((10 + $1))"; else echo 127.0.0.1; fi
}

_ec_client_url() {
    local v="CLIENT_PORT_$1" scheme=http
    [[ ${SECURE:-0} == 1 ]] && scheme=https
    echo "$scheme://$(_ec_host "$1"):${!v}"
}
_ec_peer_url() { local v="PEER_PORT_$1"; echo "http://$(_ec_host "$1"):${!v}"; }

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
    local client peer secure=() nsexec=()
    [[ ${NETNS:-0} == 1 ]] && nsexec=(ip netns exec "$(_ec_ns_name "$NETNS_ID" "$n")")
    client=$(_ec_client_url "$n")
    peer=$(_ec_peer_url "$n")
    if [[ ${SECURE:-0} == 1 ]]; then
        secure=(--cert-file "$dir/tls/server.pem" --key-file "$dir/tls/server-key.pem"
            --trusted-ca-file "$dir/tls/ca.pem" --client-cert-auth)
    fi
    # All three standard fds are redirected so that a caller reading our stdout
    # through a pipe (e.g. `$(...)` or Foundation.Process) is not held open by etcd.
    # `ip netns exec` switches namespace and execs etcd (no fork): $! is etcd's pid.
    "${nsexec[@]}" "$ETCD_BIN" \
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

# ---- Network-namespace mode -------------------------------------------------------

# 8 hex digits naming DIR (an absolute path) in the namespace, bridge and veth names.
_ec_netns_id() { printf '%s' "$1" | sha256sum | cut -c1-8; }
_ec_ns_name() { echo "bec-$1-$2"; }    # member N's namespace
_ec_br_name() { echo "bec-$1"; }       # the bridge (12 characters)
_ec_veth_name() { echo "bec-$1-v$2"; } # root-namespace end of member N's veth (15)

# DIR's absolute path as `start` computes it (also for a DIR that no longer exists).
_ec_abs_dir() {
    if [[ -d $1 ]]; then
        (cd "$1" && pwd)
    elif [[ $1 == /* ]]; then
        echo "$1"
    else
        echo "$PWD/$1"
    fi
}

# Runs a command inside namespace NS, bounded in time.
_ec_nsexec() {
    local ns=$1
    shift
    timeout 10 ip netns exec "$ns" "$@"
}

_ec_require_netns() {
    [[ ${NETNS:-0} == 1 ]] ||
        _ec_die "'$1' needs network-namespace mode (start the cluster with ETCD_NETNS=1)"
    _ec_ensure_netns_tools
}

_ec_ip2int() {
    local IFS=. a b c d
    read -r a b c d <<<"$1"
    echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

# True if the /24 NET.0 overlaps an IPv4 route (in any table) or address of the machine.
_ec_subnet_in_use() {
    local lo hi f1 f2 cidr base len first
    lo=$(_ec_ip2int "$1.0")
    hi=$((lo + 255))
    while read -r f1 f2 _; do
        case $f1 in
            default) continue ;;
            local | broadcast | unicast | multicast | anycast | blackhole | unreachable | prohibit | throw | nat)
                cidr=$f2 ;;
            *) cidr=$f1 ;;
        esac
        [[ $cidr =~ ^([0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)(/([0-9]+))?$ ]] || continue
        base=$(_ec_ip2int "${BASH_REMATCH[1]}")
        len=${BASH_REMATCH[3]:-32}
        ((len > 0)) || continue
        first=$((base & ~((1 << (32 - len)) - 1) & 0xffffffff))
        ((first <= hi && first + (1 << (32 - len)) - 1 >= lo)) && return 0
    done < <(
        ip -4 -o route show table all 2>/dev/null
        ip -4 -o addr show 2>/dev/null | awk '{print $4}'
    )
    return 1
}

# Prints "10.A.B" for a free /24 derived from ID (the next one along if taken).
_ec_pick_subnet() {
    local id=$1 a b i net
    a=$((16#${id:0:2} % 254 + 1))
    b=$((16#${id:2:2}))
    for ((i = 0; i < 1000; i++)); do
        net="10.$a.$b"
        if ! _ec_subnet_in_use "$net"; then
            echo "$net"
            return 0
        fi
        b=$(((b + 1) % 256))
        ((b == 0)) && a=$((a % 254 + 1))
    done
    _ec_die "no free /24 in 10.0.0.0/8 found"
}

# True if a namespace, veth or bridge of ID exists.
_ec_netns_leftovers() {
    local id=$1 n
    [[ -e /sys/class/net/$(_ec_br_name "$id") ]] && return 0
    for n in 1 2 3; do
        [[ -e /run/netns/$(_ec_ns_name "$id" "$n") ]] && return 0
        [[ -e /sys/class/net/$(_ec_veth_name "$id" "$n") ]] && return 0
    done
    return 1
}

# Removes what netns mode made for ID: SIGKILLs (by pid) whatever still runs in its
# namespaces, deletes them, the veths and the bridge. Idempotent and bounded.
_ec_netns_teardown() {
    local id=$1 n ns veth br pid pids deadline
    for n in 1 2 3; do
        ns=$(_ec_ns_name "$id" "$n")
        [[ -e /run/netns/$ns ]] || continue
        pids=$(timeout 10 ip netns pids "$ns" 2>/dev/null) || pids=""
        for pid in $pids; do
            _ec_pid_alive "$pid" || continue
            _ec_log "killing pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) still in namespace $ns"
            kill -KILL "$pid" 2>/dev/null || true
        done
        deadline=$(($(_ec_now_ms) + 5000))
        for pid in $pids; do
            while _ec_pid_alive "$pid" && (($(_ec_now_ms) < deadline)); do sleep 0.05; done
            if _ec_pid_alive "$pid"; then _ec_log "pid $pid in namespace $ns survived SIGKILL"; fi
        done
        timeout 10 ip netns del "$ns" 2>/dev/null || true
    done
    for n in 1 2 3; do
        veth=$(_ec_veth_name "$id" "$n")
        if [[ -e /sys/class/net/$veth ]]; then timeout 10 ip link del "$veth" 2>/dev/null || true; fi
    done
    br=$(_ec_br_name "$id")
    if [[ -e /sys/class/net/$br ]]; then timeout 10 ip link del "$br" 2>/dev/null || true; fi
    # A deleted namespace takes its end of the veth (and so the pair) with it asynchronously.
    deadline=$(($(_ec_now_ms) + 5000))
    while _ec_netns_leftovers "$id"; do
        if (($(_ec_now_ms) >= deadline)); then
            _ec_log "could not remove:" /run/netns/bec-"$id"-* /sys/class/net/bec-"$id"*
            return 1
        fi
        sleep 0.05
    done
}

# Bridge, namespaces (lo up) and veths for the members of the cluster in cluster.env.
_ec_netns_setup() {
    local br ns veth peer n
    br=$(_ec_br_name "$NETNS_ID")
    ip link add name "$br" type bridge forward_delay 0 stp_state 0
    ip addr add "$NETNS_NET.1/24" dev "$br"
    ip link set "$br" up
    for n in 1 2 3; do
        ns=$(_ec_ns_name "$NETNS_ID" "$n")
        veth=$(_ec_veth_name "$NETNS_ID" "$n")
        peer="bec-$NETNS_ID-p$n"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip link add name "$veth" type veth peer name "$peer" netns "$ns"
        ip -n "$ns" link set "$peer" name eth0
        ip -n "$ns" addr add "$(_ec_host "$n")/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip link set "$veth" master "$br" up
    done
}

# True if a TCP SYN from namespace NS ("" = the root namespace) to IP is answered (a
# refusal counts: nothing listens on port 9) within a second.
_ec_reach() {
    local ns=$1 ip=$2 out rc=0 run=(timeout 1)
    [[ -n $ns ]] && run+=(ip netns exec "$ns")
    # shellcheck disable=SC2016 # expanded by the inner bash
    out=$(LC_ALL=C "${run[@]}" bash -c 'exec 3<>"/dev/tcp/$1/9"' _ "$ip" 2>&1) || rc=$?
    ((rc == 0)) || [[ $out == *"Connection refused"* ]]
}

# Prints the pairs (root->N, N->M) that cannot reach each other; true if there are none.
# (The nine probes run at once: a dropped SYN costs the probe's whole second.)
_ec_netns_unreachable() {
    local n m i bad=() labels=() pids=()
    for n in 1 2 3; do
        _ec_reach "" "$(_ec_host "$n")" &
        pids+=($!) labels+=("root->$n")
        for m in 1 2 3; do
            [[ $m == "$n" ]] && continue
            _ec_reach "$(_ec_ns_name "$NETNS_ID" "$n")" "$(_ec_host "$m")" &
            pids+=($!) labels+=("$n->$m")
        done
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || bad+=("${labels[$i]}")
    done
    echo "${bad[*]}"
    ((${#bad[@]} == 0))
}

# Waits (bounded) until the root namespace and the members reach each other. If they do
# not while bridged packets go through the root namespace's iptables/nftables forward
# hooks (br_netfilter's bridge-nf-call-iptables=1), a forward rule there is eating them:
# turns that off (for the root namespace) and tries again.
_ec_netns_check() {
    local deadline bad sysctl=/proc/sys/net/bridge/bridge-nf-call-iptables brnf=0
    [[ -r $sysctl && $(<"$sysctl") == 1 ]] && brnf=1
    # (Links come up at once; if br_netfilter may be the cause, not long to wait.)
    deadline=$(($(_ec_now_ms) + (brnf ? 1000 : 5000)))
    until bad=$(_ec_netns_unreachable); do
        (($(_ec_now_ms) < deadline)) || break
        sleep 0.1
    done
    [[ -z $bad ]] && return 0
    if ((brnf)) && [[ -w $sysctl ]]; then
        _ec_log "unreachable ($bad) with bridge-nf-call-iptables=1; setting it to 0"
        echo 0 >"$sysctl"
        if [[ -w /proc/sys/net/bridge/bridge-nf-call-ip6tables ]]; then
            echo 0 >/proc/sys/net/bridge/bridge-nf-call-ip6tables
        fi
        bad=$(_ec_netns_unreachable) && return 0
    fi
    _ec_die "the namespaces and the bridge cannot reach each other ($bad)"
}

# start's exit trap in netns mode: stops what a failed or interrupted start left running.
_ec_start_abort() {
    local dir=$1 id=$2 n pid running=0
    for n in 1 2 3; do
        pid=$(cat "$dir/member-$n.pid" 2>/dev/null) || continue
        _ec_pid_alive "$pid" && running=1
    done
    if ((running)) || _ec_netns_leftovers "$id"; then
        _ec_log "start failed; cleaning up"
        etcd_cluster_stop "$dir" || true
    fi
}

# True if member N's client port answers inside its namespace (over lo: faults do not apply).
_ec_member_listening() {
    local n=$1 port_var="CLIENT_PORT_$1"
    # shellcheck disable=SC2016 # expanded by the inner bash
    _ec_nsexec "$(_ec_ns_name "$NETNS_ID" "$n")" \
        bash -c '(exec 3<>"/dev/tcp/$1/$2")' _ "$(_ec_host "$n")" "${!port_var}"
}

# Removes member N's fault rules (if its namespace still exists).
_ec_fault_clear() {
    local dir=$1 n=$2 ns
    ns=$(_ec_ns_name "$NETNS_ID" "$n")
    if [[ -e /run/netns/$ns ]]; then
        printf 'table inet beacon_fault\ndelete table inet beacon_fault\n' |
            _ec_nsexec "$ns" nft -f - || _ec_die "could not remove the fault rules of member $n"
    fi
    rm -f "$dir/fault-$n"
}

# _ec_fault KIND DIR N: replaces member N's fault rules with KIND (isolate, cut, oneway).
_ec_fault() {
    local kind=$1 dir=${2:?usage: $1 DIR N} n=${3:?usage: $1 DIR N}
    local ns m others="" in_rule out_rule what
    _ec_check_member "$n"
    _ec_load_env "$dir"
    _ec_require_netns "$kind"
    ns=$(_ec_ns_name "$NETNS_ID" "$n")
    [[ -e /run/netns/$ns ]] || _ec_die "namespace $ns of member $n does not exist (cluster stopped?)"
    for m in 1 2 3; do
        [[ $m == "$n" ]] || others+="${others:+, }$(_ec_host "$m")"
    done
    case $kind in
        isolate)
            in_rule="ip saddr { $others } counter drop"
            out_rule="ip daddr { $others } counter drop"
            what="packets between it and { $others } dropped both ways; clients still reach it"
            ;;
        cut)
            in_rule='iifname != "lo" counter drop'
            out_rule='oifname != "lo" counter drop'
            what="every packet to and from it dropped (peers and clients)"
            ;;
        oneway)
            in_rule="ip saddr { $others } counter" # counted, let through
            out_rule="ip daddr { $others } counter drop"
            what="packets from it to { $others } dropped; it still receives theirs"
            ;;
        *) _ec_die "unknown fault $kind" ;;
    esac
    # One transaction: the old rules go and the new ones come at once. The counters
    # show what was dropped: ip netns exec NS nft list table inet beacon_fault.
    _ec_nsexec "$ns" nft -f - <<EOF || _ec_die "nft could not load the $kind rules for member $n"
table inet beacon_fault
delete table inet beacon_fault
table inet beacon_fault {
    chain input {
        type filter hook input priority filter; policy accept;
        $in_rule
    }
    chain output {
        type filter hook output priority filter; policy accept;
        $out_rule
    }
}
EOF
    echo "$kind" >"$dir/fault-$n"
    local rules # (not `nft ... | grep -q`: with pipefail, grep's early exit can fail nft)
    rules=$(_ec_nsexec "$ns" nft list table inet beacon_fault 2>&1) || rules=""
    [[ $rules == *" drop"* ]] || _ec_die "the $kind rules for member $n are not in place: $rules"
    _ec_log "$kind member $n: $what"
}

etcd_cluster_isolate() (
    set -euo pipefail
    _ec_fault isolate "$@"
)

etcd_cluster_cut() (
    set -euo pipefail
    _ec_fault cut "$@"
)

etcd_cluster_oneway() (
    set -euo pipefail
    _ec_fault oneway "$@"
)

etcd_cluster_heal() (
    set -euo pipefail
    local dir=${1:?usage: heal DIR [N]} n members=(1 2 3)
    if (($# > 1)); then
        _ec_check_member "$2"
        members=("$2")
    fi
    _ec_load_env "$dir"
    _ec_require_netns heal
    for n in "${members[@]}"; do _ec_fault_clear "$dir" "$n"; done
    _ec_log "healed member(s) ${members[*]}"
)

# ---- Either mode ------------------------------------------------------------------

_ec_pid_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }

# Prints member N's pid; fails if it is not running.
_ec_running_pid() {
    local dir=$1 n=$2 pid
    [[ -f $dir/member-$n.pid ]] || _ec_die "member $n is not running (no $dir/member-$n.pid)"
    pid=$(<"$dir/member-$n.pid")
    _ec_pid_alive "$pid" || _ec_die "member $n (pid $pid) is not running"
    echo "$pid"
}

etcd_cluster_pause() (
    set -euo pipefail
    local dir=${1:?usage: pause DIR N} n=${2:?usage: pause DIR N} pid deadline
    _ec_check_member "$n"
    pid=$(_ec_running_pid "$dir" "$n")
    kill -STOP "$pid"
    deadline=$(($(_ec_now_ms) + 5000))
    until [[ $(_ec_pid_state "$pid") == [Tt] ]]; do
        (($(_ec_now_ms) < deadline)) || _ec_die "member $n (pid $pid) did not stop after SIGSTOP"
        sleep 0.02
    done
    _ec_log "paused member $n (pid $pid)"
)

etcd_cluster_resume() (
    set -euo pipefail
    local dir=${1:?usage: resume DIR N} n=${2:?usage: resume DIR N} pid deadline
    _ec_check_member "$n"
    pid=$(_ec_running_pid "$dir" "$n")
    kill -CONT "$pid"
    deadline=$(($(_ec_now_ms) + 5000))
    while [[ $(_ec_pid_state "$pid") == [Tt] ]]; do
        (($(_ec_now_ms) < deadline)) || _ec_die "member $n (pid $pid) still stopped after SIGCONT"
        sleep 0.02
    done
    _ec_log "resumed member $n (pid $pid)"
)

# Prints the value of the first line "KEY" : VALUE in FILE (etcdctl -w fields).
_ec_field() { awk -F' : ' -v k="\"$1\"" '$1 == k {print $2; exit}' "$2"; }

# Prints member N's etcdctl -w fields output for `ARGS...` (bounded).
_ec_ctl_member() {
    local n=$1
    shift
    timeout 5 "$ETCDCTL_BIN" --endpoints="$(_ec_client_url "$n")" --dial-timeout=1s \
        --command-timeout=2s "$@" -w fields
}

etcd_cluster_leader() (
    set -euo pipefail
    local dir=${1:?usage: leader DIR [TIMEOUT_S]}
    local timeout_s=${2:-${ETCD_CLUSTER_TIMEOUT:-30}}
    _ec_ensure_binaries
    _ec_load_env "$dir"
    local tmp n m id lead term key deadline seen name found pid timer answered
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064 # expand now
    trap "rm -rf '$tmp'" EXIT
    local -A ids=() votes=() member_of=()
    deadline=$(($(_ec_now_ms) + timeout_s * 1000))
    while true; do
        # Every member at once, decided as soon as two answers agree; if two disagree,
        # the third gets 0.3 s more: a paused member (which holds its connections but
        # answers nothing) costs no waiting for its timeout. (Polled, not `wait -n`:
        # that one misses jobs when the function runs in a `$(...)` of a sourcing shell.)
        member_of=()
        for n in 1 2 3; do
            timeout 5 "$ETCDCTL_BIN" --endpoints="$(_ec_client_url "$n")" --dial-timeout=1s \
                --command-timeout=2s endpoint status -w fields >"$tmp/$n" 2>&1 &
            member_of[$!]=$n
        done
        found=""
        votes=()
        seen=""
        timer=""
        answered=0
        while ((${#member_of[@]})) && [[ -z $found ]]; do
            if [[ -n $timer ]] && (($(_ec_now_ms) >= timer)); then break; fi
            pid=""
            for m in "${!member_of[@]}"; do
                if ! _ec_pid_alive "$m"; then
                    pid=$m
                    break
                fi
            done
            if [[ -z $pid ]]; then
                sleep 0.02
                continue
            fi
            n=${member_of[$pid]}
            unset "member_of[$pid]"
            answered=$((answered + 1))
            ((answered == 2)) && timer=$(($(_ec_now_ms) + 300))
            id=$(_ec_field MemberID "$tmp/$n")
            lead=$(_ec_field Leader "$tmp/$n")
            term=$(_ec_field RaftTerm "$tmp/$n")
            if [[ -z $id ]]; then
                seen+=" $n:no-answer"
                continue
            fi
            ids[$id]=$n
            seen+=" $n:leader=$lead,term=$term"
            [[ -n $lead && $lead != 0 ]] || continue
            key="$lead/$term"
            votes[$key]=$((${votes[$key]:-0} + 1))
            ((${votes[$key]} >= 2)) && found=$lead
        done
        # The slow ones (timeout passes SIGTERM on to etcdctl).
        for pid in "${!member_of[@]}"; do kill "$pid" 2>/dev/null || true; done
        wait
        if [[ -n $found && -z ${ids[$found]:-} ]]; then
            # The leader itself has not answered (paused?): its id is in the member list.
            for m in "${ids[@]}"; do
                _ec_ctl_member "$m" member list >"$tmp/list" 2>/dev/null || continue
                name=$(awk -F' : ' -v i="$found" '$1 == "\"ID\"" {f = ($2 == i)}
                    f && $1 == "\"Name\"" {gsub(/"/, "", $2); print $2; exit}' "$tmp/list")
                [[ $name =~ ^m[123]$ ]] && ids[$found]=${name#m}
                break
            done
        fi
        if [[ -n $found && -n ${ids[$found]:-} ]]; then
            echo "${ids[$found]}"
            return 0
        fi
        if (($(_ec_now_ms) >= deadline)); then
            _ec_die "no leader named by a majority within ${timeout_s}s (last:$seen)"
        fi
        sleep 0.1
    done
)

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
    local ports_str ports netns=${ETCD_NETNS:-0} id="" net=""
    if [[ $netns == 1 ]]; then
        _ec_ensure_netns_tools
        id=$(_ec_netns_id "$dir")
        if _ec_netns_leftovers "$id"; then
            _ec_log "removing the namespaces/veths/bridge an earlier run on $dir left"
            _ec_netns_teardown "$id" || _ec_die "could not remove the leftovers of an earlier run"
        fi
        net=$(_ec_pick_subnet "$id")
        ports_str="2379 2379 2379 2380 2380 2380" # one address per member
    else
        ports_str=$(_ec_pick_ports 6)
    fi
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
        if [[ $netns == 1 ]]; then
            echo "NETNS=1"
            echo "NETNS_ID=$id"
            echo "NETNS_NET=$net"
        fi
    } >"$dir/cluster.env"
    if [[ $netns == 1 ]]; then
        # From here on a failure (or an interrupt) removes what was made so far.
        # shellcheck disable=SC2064 # expand now
        trap "_ec_start_abort $(printf %q "$dir") $id" EXIT
        trap 'exit 130' INT TERM
        if [[ ${ETCD_SECURE:-0} == 1 ]]; then
            _ec_make_certificates "$dir" "$net.11" "$net.12" "$net.13"
        fi
    else
        [[ ${ETCD_SECURE:-0} == 1 ]] && _ec_make_certificates "$dir"
    fi
    _ec_load_env "$dir"
    if [[ $netns == 1 ]]; then
        _ec_netns_setup
        _ec_netns_check
    fi
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
    [[ $netns == 1 ]] && trap - EXIT INT TERM
    _ec_log "cluster healthy: $eps"
    echo "$eps"
)

etcd_cluster_stop() (
    set -euo pipefail
    local dir=${1:?usage: stop DIR} n pid deadline id=""
    # Network-namespace mode, or what a crashed run of it on DIR left behind.
    if [[ -f $dir/cluster.env ]] && grep -qx 'NETNS=1' "$dir/cluster.env"; then
        id=$(sed -n 's/^NETNS_ID=//p' "$dir/cluster.env")
    else
        id=$(_ec_netns_id "$(_ec_abs_dir "$dir")")
        _ec_netns_leftovers "$id" || id=""
    fi
    if [[ -n $id ]]; then
        _ec_ensure_netns_tools
        # Healed first, so that a member's graceful shutdown is not held up by a fault.
        NETNS_ID=$id
        for n in 1 2 3; do (_ec_fault_clear "$dir" "$n") || true; done
    fi
    # Paused members (`pause`) are continued first: they would act on SIGTERM only then,
    # and a leader's shutdown would wait for them.
    for n in 1 2 3; do
        pid=$(cat "$dir/member-$n.pid" 2>/dev/null) || continue
        if _ec_pid_alive "$pid" && [[ $(_ec_pid_state "$pid") == [Tt] ]]; then
            kill -CONT "$pid" 2>/dev/null || true
        fi
    done
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
    if [[ -n $id ]]; then
        _ec_netns_teardown "$id" || _ec_die "could not remove the namespaces/veths/bridge bec-$id*"
        _ec_log "removed namespaces bec-$id-1..3, their veths and bridge bec-$id"
    fi
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
    if [[ ${NETNS:-0} == 1 ]]; then
        _ec_wait_until "member $n to listen" "$dir" "${ETCD_CLUSTER_TIMEOUT:-30}" \
            _ec_member_listening "$n" -- "$n"
    else
        _ec_wait_until "member $n to listen" "$dir" "${ETCD_CLUSTER_TIMEOUT:-30}" \
            _ec_port_listening "${!port_var}" -- "$n"
    fi
    for m in 1 2 3; do
        [[ $m == "$n" ]] && continue
        [[ -f $dir/fault-$m ]] && continue # isolated/cut/one-way: no help to a quorum
        _ec_pid_alive "$(cat "$dir/member-$m.pid" 2>/dev/null)" && alive=$((alive + 1))
    done
    if [[ -f $dir/fault-$n ]]; then
        _ec_log "restarted member $n ($ep) under fault '$(<"$dir/fault-$n")', not waiting for health"
    elif ((alive >= 2)); then
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
        pause) etcd_cluster_pause "$@" ;;
        resume) etcd_cluster_resume "$@" ;;
        leader) etcd_cluster_leader "$@" ;;
        isolate) etcd_cluster_isolate "$@" ;;
        cut) etcd_cluster_cut "$@" ;;
        oneway) etcd_cluster_oneway "$@" ;;
        heal) etcd_cluster_heal "$@" ;;
        *)
            # The CLI lines of the header comment.
            sed -n '/^# CLI:$/,/^#$/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
            return 2
            ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    _ec_main "$@"
fi
