#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Real applications under rb2-run on one host (doc/guides/apps/rb2-run.md),
# each from Debian's packages, unmodified, server and client both under
# rb2-run. Every check also requires the client's stats line to show every
# connection over rb2 and none failed: a run that fell back to kernel TCP
# fails here.
#
#   test_rb2run_apps.sh BUILD_DIR
#
#   - memcached -t 4: memcslap without errors; values of 1 B to 1 MB stored
#     with memccp read back byte for byte with memccat;
#   - Redis: values set and read back; BGSAVE (a fork) while 10 clients
#     stay connected and busy; redis-benchmark -c 1 and -c 50, -P 1 and
#     -P 16, without errors; with 4 I/O threads, redis-benchmark -c 50 and a
#     value read back, the threads' reads counted;
#   - nginx, a master and 2 workers (forked after the listener), sendfile
#     on: curl fetches 700 B and 5 MB byte for byte, also through nginx's
#     proxy to itself (upstream sockets in epoll before their connect); wrk
#     without socket errors;
#   - Apache, the event MPM (one process, its listener thread and 16
#     workers): curl fetches 700 B and 5 MB byte for byte, and 20 files on
#     one kept-alive connection within 10 s; wrk without socket errors;
#   - iperf3: both directions, and -P 4;
#   - sockperf: ping-pong and throughput;
#   - PostgreSQL, a backend forked per connection (the server as the user
#     postgres, through root's service): pgbench's TPC-B-like run without a
#     failed transaction, the balances summing to the history; 2 MB stored
#     and read back byte for byte; every backend's connection over rb2;
#   - faults: rb2-sockd killed mid-stream (the transfer goes on, whole), and
#     a client killed mid-stream (its peer reads the end within 2 s).
# The quickstart installs these programs; a missing one fails the test and
# names its package.
set -uo pipefail

build=$(cd "$1" && pwd)
run=$build/apps/rb2-run/rb2-run
sockd=$build/apps/rb2-sockd/rb2-sockd
tmp=$(mktemp -d)
export RB2_SOCKD_PATH=$tmp/sockd.sock
export RB2_RUN_STATS=1
fails=0
trap '"$sockd" --stop >/dev/null 2>&1; kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $* [${SECONDS} s]"; fails=$((fails + 1)); }
ok() { echo "ok: $* [${SECONDS} s]"; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

for p in memcached:memcached memcslap:libmemcached-tools memccp:libmemcached-tools \
	memccat:libmemcached-tools redis-server:redis-server redis-cli:redis-tools \
	redis-benchmark:redis-tools nginx:nginx-light curl:curl wrk:wrk iperf3:iperf3 \
	sockperf:sockperf apache2:apache2; do
	command -v "${p%%:*}" >/dev/null || PATH=$PATH:/usr/sbin command -v "${p%%:*}" >/dev/null ||
		{ echo "FAIL: ${p%%:*} is not installed: apt-get install ${p#*:} (usertools/rb2-quickstart.sh installs it)"; exit 1; }
done
export PATH=$PATH:/usr/sbin
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$pgbin/pgbench" ] && id postgres >/dev/null 2>&1 ||
	{ echo "FAIL: PostgreSQL is not installed: apt-get install postgresql (usertools/rb2-quickstart.sh installs it)"; exit 1; }

# over_rb2 FILE [MIN]: FILE's stats lines show at least MIN (default 1)
# connections over rb2, every one of them: none failed, none kernel TCP.
over_rb2() {
	local n
	n=$(grep -ho " [0-9]* connections over rb2" "$1" | awk '{s += $1} END {print s + 0}')
	[ "$n" -ge "${2:-1}" ] && ! grep -q "kernel TCP" "$1" && ! grep -q " [1-9][0-9]* failed" "$1"
}
# The stats of FILE's rb2-run lines, one line.
said() { grep -h "^rb2-run: pid" "$1" | cut -d: -f3- | head -3 | tr '\n' ';'; }

# fetched TAG WWW ERR: curl under rb2-run fetches WWW's files small and big
# from port $port (into $tmp/TAG.got.*, its stderr onto $tmp/ERR.err);
# prints how many came byte for byte.
fetched() {
	local n=0 f
	for f in small big; do
		timeout 30 "$run" curl -s -o "$tmp/$1.got.$f" "http://127.0.0.1:$port/$f" \
			2>>"$tmp/$3.err" && cmp -s "$tmp/$1.got.$f" "$2/$f" && n=$((n + 1))
	done
	echo $n
}

# Until something listens on port $1 (found without connecting: a probe
# would be a connection of its own, and a kernel TCP one).
wait_port() {
	for _ in $(seq 100); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# ---- memcached -------------------------------------------------------------
port=$(free_port)
"$run" memcached -u root -t 4 -l 127.0.0.1 -p "$port" -U 0 -I 2m >"$tmp/mc.out" 2>&1 &
mpid=$!
wait_port "$port" || fail "memcached did not start: $(cat "$tmp/mc.out")"
if timeout 120 "$run" memcslap --servers=127.0.0.1:"$port" --concurrency=8 \
	--execute-number=2000 >"$tmp/slap.out" 2>"$tmp/slap.err" &&
	! grep -qi "error\|fail" "$tmp/slap.out" && over_rb2 "$tmp/slap.err" 8; then
	ok "memcslap, 8 clients against memcached -t 4: $(grep "Time total" "$tmp/slap.out" | tr -s ' ');$(said "$tmp/slap.err")"
else
	fail "memcslap"; tail -n 5 "$tmp/slap.out" "$tmp/slap.err"
fi
mkdir "$tmp/mcv"
head -c 1 /dev/urandom >"$tmp/mcv/one"
head -c 3000 /dev/urandom >"$tmp/mcv/small"
head -c 1000000 /dev/urandom >"$tmp/mcv/big"
(cd "$tmp/mcv" && "$run" memccp --servers=127.0.0.1:"$port" one small big) 2>"$tmp/ccp.err"
same=0
for f in one small big; do
	# memccat ends each value with a newline of its own
	"$run" memccat --servers=127.0.0.1:"$port" "$f" >"$tmp/cat.$f" 2>>"$tmp/cat.err" &&
		cmp -s "$tmp/cat.$f" <(cat "$tmp/mcv/$f"; echo) && same=$((same + 1))
done
if [ $same = 3 ] && over_rb2 "$tmp/ccp.err" && over_rb2 "$tmp/cat.err" 3; then
	ok "memccp then memccat: values of 1 B, 3000 B and 1 MB read back byte for byte over rb2"
else
	fail "memccp/memccat: $same of 3 read back"; cat "$tmp/ccp.err" "$tmp/cat.err" | head
fi
kill "$mpid"; wait "$mpid" 2>/dev/null

# ---- Redis -----------------------------------------------------------------
port=$(free_port)
"$run" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$tmp" --dbfilename dump.rdb --daemonize no >"$tmp/redis.out" 2>"$tmp/redis.err" &
rpid=$!
wait_port "$port" || fail "redis-server did not start: $(tail -n 3 "$tmp/redis.out")"
cli() { "$run" redis-cli -p "$port" "$@"; }
cli set rb2key "value over rb2" >/dev/null 2>"$tmp/cli1.err"
got=$(cli get rb2key 2>"$tmp/cli2.err")
if [ "$got" = "value over rb2" ] && over_rb2 "$tmp/cli1.err" && over_rb2 "$tmp/cli2.err"; then
	ok "redis: SET then GET read back over rb2"
else
	fail "redis SET/GET: '$got'"; cat "$tmp/cli2.err"
fi
for c in 1 50; do
	for P in 1 16; do
		if timeout 120 "$run" redis-benchmark -p "$port" -t set,get -n 20000 -c "$c" \
			-P "$P" -q >"$tmp/bench.out" 2>"$tmp/bench.err" &&
			! grep -qi "error" "$tmp/bench.out" && over_rb2 "$tmp/bench.err" "$c"; then
			ok "redis-benchmark -c $c -P $P: $(tr '\r' '\n' <"$tmp/bench.out" | grep -E "^(SET|GET): [0-9.]+ requests" | cut -d, -f1 | tr '\n' ' ');$(said "$tmp/bench.err")"
		else
			fail "redis-benchmark -c $c -P $P"; tail -n 3 "$tmp/bench.out" "$tmp/bench.err"
		fi
	done
done
# BGSAVE forks Redis while 10 clients are connected and busy: the child
# saves, and the clients go on in the parent.
timeout 120 "$run" redis-benchmark -p "$port" -t set -r 200000 -n 400000 -d 64 -P 16 -q \
	>/dev/null 2>&1
timeout 120 "$run" redis-benchmark -p "$port" -t set,get -n 100000 -c 10 -q \
	>"$tmp/bg.out" 2>"$tmp/bg.err" &
bpid=$!
sleep 0.3
last=$(cli lastsave 2>/dev/null)
cli bgsave >"$tmp/bgsave.out" 2>/dev/null
for _ in $(seq 100); do
	[ "$(cli lastsave 2>/dev/null)" != "$last" ] && break; sleep 0.1
done
wait "$bpid"; brc=$?
status=$(cli info persistence 2>/dev/null | tr -d '\r' | grep rdb_last_bgsave_status)
if [ $brc = 0 ] && [ "$(cli lastsave 2>/dev/null)" != "$last" ] &&
	[ "$status" = "rdb_last_bgsave_status:ok" ] && [ -s "$tmp/dump.rdb" ] &&
	! grep -qi error "$tmp/bg.out" && over_rb2 "$tmp/bg.err" 10 &&
	[ "$(cli get rb2key 2>/dev/null)" = "value over rb2" ]; then
	ok "redis: BGSAVE ($(cat "$tmp/bgsave.out")) while 10 clients stay connected: saved $(stat -c %s "$tmp/dump.rdb") bytes, every request answered"
else
	fail "redis BGSAVE: rc $brc, $status"; tail -n 3 "$tmp/bg.out" "$tmp/bg.err" "$tmp/redis.out"
fi
cli shutdown nosave >/dev/null 2>&1
wait "$rpid"
if over_rb2 "$tmp/redis.err" 100; then
	ok "redis-server's own line:$(said "$tmp/redis.err")"
else
	fail "redis-server's stats"; cat "$tmp/redis.err"
fi

# Redis with 4 I/O threads, which read and write the clients' connections
# beside the main thread: INFO must count reads the threads did.
port=$(free_port)
"$run" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--io-threads 4 --io-threads-do-reads yes >"$tmp/rio.out" 2>"$tmp/rio.err" &
rpid=$!
wait_port "$port" || fail "redis-server --io-threads 4 did not start: $(tail -n 3 "$tmp/rio.out")"
value=$(head -c 3000 /dev/urandom | base64 -w 0)
if timeout 120 "$run" redis-benchmark -p "$port" -t set,get -n 2000 -c 50 -q \
	>"$tmp/rio.bench" 2>"$tmp/rio.bench.err" && ! grep -qi "error" "$tmp/rio.bench" &&
	over_rb2 "$tmp/rio.bench.err" 50 &&
	"$run" redis-cli -p "$port" set big "$value" >/dev/null 2>&1 &&
	[ "$("$run" redis-cli -p "$port" get big 2>/dev/null)" = "$value" ] &&
	threaded=$("$run" redis-cli -p "$port" info stats 2>/dev/null | tr -d '\r' |
		   grep "^io_threaded_reads_processed:[1-9]"); then
	ok "redis --io-threads 4: redis-benchmark -c 50 without errors, 3000 B read back, $threaded;$(said "$tmp/rio.bench.err")"
else
	fail "redis --io-threads 4 (${threaded:-no threaded reads})"; tail -n 3 "$tmp/rio.bench" "$tmp/rio.bench.err"
fi
"$run" redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
wait "$rpid"

# ---- nginx: a master and 2 workers, sendfile on ------------------------------
port=$(free_port)
port2=$(free_port)
mkdir -p "$tmp/ng/www" "$tmp/ng/tmp"
head -c 700 /dev/urandom >"$tmp/ng/www/small"
head -c 5000000 /dev/urandom >"$tmp/ng/www/big"
cat >"$tmp/ng/nginx.conf" <<EOF
user root;
worker_processes 2;
daemon off;
master_process on;
pid $tmp/ng/nginx.pid;
error_log $tmp/ng/error.log notice;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $tmp/ng/tmp;
  proxy_temp_path $tmp/ng/tmp;
  fastcgi_temp_path $tmp/ng/tmp;
  uwsgi_temp_path $tmp/ng/tmp;
  scgi_temp_path $tmp/ng/tmp;
  server {
    listen 127.0.0.1:$port; root $tmp/ng/www;
    # nginx's upstream sockets join its epoll set before connect(), and it
    # reads exactly FIONREAD's count after a full read
    location /up/ { proxy_pass http://127.0.0.1:$port2/; proxy_buffering off; }
    location /upb/ { proxy_pass http://127.0.0.1:$port2/; }
  }
  server { listen 127.0.0.1:$port2; root $tmp/ng/www; }
}
EOF
"$run" nginx -p "$tmp/ng" -c "$tmp/ng/nginx.conf" -e "$tmp/ng/error.log" \
	>"$tmp/ng.out" 2>"$tmp/ng.err" &
npid=$!
wait_port "$port" || fail "nginx did not start: $(cat "$tmp/ng.err" "$tmp/ng/error.log")"
same=$(fetched ng "$tmp/ng/www" curl)
if [ $same = 2 ] && over_rb2 "$tmp/curl.err" 2; then
	ok "nginx (2 workers, sendfile): curl fetched 700 B and 5 MB byte for byte over rb2"
else
	fail "nginx/curl: $same of 2 whole"; cat "$tmp/curl.err" "$tmp/ng/error.log" | tail
fi
# Through nginx's proxy to itself, unbuffered and buffered, 10 times each:
# its upstream connections over rb2 too.
same=0
for k in $(seq 10); do
	for loc in up upb; do
		timeout 30 "$run" curl -s -o "$tmp/got.up" "http://127.0.0.1:$port/$loc/big" \
			2>>"$tmp/curlup.err" && cmp -s "$tmp/got.up" "$tmp/ng/www/big" && same=$((same + 1))
	done
done
if [ $same = 20 ] && over_rb2 "$tmp/curlup.err" 20; then
	ok "nginx as a reverse proxy to itself (buffered and not): 20 of 20 fetches of 5 MB byte for byte"
else
	fail "nginx proxy: $same of 20 whole"; tail -n 3 "$tmp/curlup.err" "$tmp/ng/error.log"
fi
if timeout 60 "$run" wrk -t 2 -c 20 -d 1s "http://127.0.0.1:$port/small" \
	>"$tmp/wrk.out" 2>"$tmp/wrk.err" && ! grep -q "Socket errors\|Non-2xx" "$tmp/wrk.out" &&
	grep -q "requests in" "$tmp/wrk.out" && over_rb2 "$tmp/wrk.err" 20; then
	ok "wrk -c 20 against nginx: $(grep -o "[0-9]* requests in [0-9.]*s" "$tmp/wrk.out"), no socket errors;$(said "$tmp/wrk.err")"
else
	fail "wrk"; cat "$tmp/wrk.out" "$tmp/wrk.err" | tail
fi
t_quit=$SECONDS
kill -QUIT "$npid"; wait "$npid"
# A graceful stop waits for open connections: one whose end nginx never
# saw would hold it until a 60 s timeout of its own. Said, to find it.
[ $((SECONDS - t_quit)) -le 5 ] ||
	echo "note: nginx took $((SECONDS - t_quit)) s to stop after SIGQUIT"
# Each worker (forked from the master after its listen) says what it took.
# (nginx points its stderr at its error log.)
if [ "$(grep -c "connections over rb2" "$tmp/ng/error.log")" -ge 2 ] && over_rb2 "$tmp/ng/error.log" 62; then
	ok "nginx's workers:$(said "$tmp/ng/error.log")"
else
	fail "nginx's workers' stats"; cat "$tmp/ng.err" "$tmp/ng/error.log"
fi

# ---- Apache: the event MPM, its listener thread and workers ------------------
# Its listener thread sleeps in epoll while a worker adds each kept-alive
# connection to that set, and its listeners defer accept() until a client's
# first bytes (AcceptFilter, TCP_DEFER_ACCEPT): rb2-run once left every
# connection on kernel TCP, and a kept-alive connection's next request
# waited for some other event. One process (-X), which serves as the user
# www-data: it reads the files and asks the service as that user.
port=$(free_port)
mkdir -p "$tmp/ap/www"
chmod 755 "$tmp"
head -c 700 /dev/urandom >"$tmp/ap/www/small"
head -c 5000000 /dev/urandom >"$tmp/ap/www/big"
cat >"$tmp/ap/apache2.conf" <<EOF
ServerRoot "$tmp/ap"
ServerName localhost
User www-data
Group www-data
Listen 127.0.0.1:$port
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
PidFile $tmp/ap/apache2.pid
ErrorLog $tmp/ap/error.log
Mutex file:$tmp/ap
DocumentRoot "$tmp/ap/www"
EnableSendfile On
ThreadsPerChild 16
MaxKeepAliveRequests 0
MaxRequestWorkers 16
EOF
"$run" apache2 -X -f "$tmp/ap/apache2.conf" >"$tmp/ap.out" 2>"$tmp/ap.err" &
apid=$!
wait_port "$port" || fail "apache2 did not start: $(cat "$tmp/ap.err" "$tmp/ap/error.log")"
same=$(fetched ap "$tmp/ap/www" apcurl)
# 20 requests on one kept-alive connection: each must be answered as it
# comes (the bound is 10 s for all; with the bug, each waited 1-4 s).
urls=()
for k in $(seq 20); do urls+=("http://127.0.0.1:$port/small" -o "$tmp/apka.$k"); done
timeout 10 "$run" curl -s "${urls[@]}" 2>"$tmp/apka.err"
kept=0
for k in $(seq 20); do cmp -s "$tmp/apka.$k" "$tmp/ap/www/small" && kept=$((kept + 1)); done
if [ $same = 2 ] && over_rb2 "$tmp/apcurl.err" 2 && [ $kept = 20 ] &&
	grep -q " 1 connections over rb2" "$tmp/apka.err" && over_rb2 "$tmp/apka.err"; then
	ok "Apache (event MPM): curl fetched 700 B and 5 MB byte for byte over rb2, and 20 of 20 on one kept-alive connection within 10 s"
else
	fail "Apache: $same of 2 whole, $kept of 20 on one kept-alive connection"
	cat "$tmp/apcurl.err" "$tmp/apka.err" "$tmp/ap/error.log" | tail
fi
if timeout 60 "$run" wrk -t 1 -c 8 -d 1s "http://127.0.0.1:$port/small" \
	>"$tmp/apwrk.out" 2>"$tmp/apwrk.err" && ! grep -q "Socket errors\|Non-2xx" "$tmp/apwrk.out" &&
	grep -q "requests in" "$tmp/apwrk.out" && over_rb2 "$tmp/apwrk.err" 8; then
	ok "wrk -c 8 against Apache: $(grep -o "[0-9]* requests in [0-9.]*s" "$tmp/apwrk.out"), no socket errors;$(said "$tmp/apwrk.err")"
else
	fail "wrk against Apache"; cat "$tmp/apwrk.out" "$tmp/apwrk.err" | tail
fi
kill -TERM "$apid"; wait "$apid" 2>/dev/null

# ---- iperf3 ------------------------------------------------------------------
port=$(free_port)
"$run" iperf3 -s -p "$port" >"$tmp/ips.out" 2>"$tmp/ips.err" &
ipid=$!
wait_port "$port"
for a in "" "-R" "-P 4"; do
	# shellcheck disable=SC2086 # the options as words
	if timeout 60 "$run" iperf3 -c 127.0.0.1 -p "$port" -t 1 $a >"$tmp/ip.out" 2>"$tmp/ip.err" &&
		grep -q "receiver" "$tmp/ip.out" && over_rb2 "$tmp/ip.err" 2; then
		ok "iperf3 ${a:-one stream}: $(grep receiver "$tmp/ip.out" | tail -n 1 | grep -o "[0-9.]* [GM]bits/sec");$(said "$tmp/ip.err")"
	else
		fail "iperf3 $a"; tail -n 5 "$tmp/ip.out" "$tmp/ip.err"
	fi
done
kill "$ipid"; wait "$ipid" 2>/dev/null

# ---- sockperf ----------------------------------------------------------------
port=$(free_port)
"$run" sockperf server -i 127.0.0.1 -p "$port" --tcp >"$tmp/sps.out" 2>&1 &
spid=$!
wait_port "$port"
if timeout 60 "$run" sockperf ping-pong -i 127.0.0.1 -p "$port" --tcp -t 1 -m 64 --mps 500000 \
	>"$tmp/pp.out" 2>&1 && grep -q "percentile 50.000" "$tmp/pp.out" &&
	! grep -q "ERROR" "$tmp/pp.out" && over_rb2 "$tmp/pp.out"; then
	ok "sockperf ping-pong 64 B: p50 $(grep "percentile 50.000" "$tmp/pp.out" | awk '{print $NF}') us;$(said "$tmp/pp.out")"
else
	fail "sockperf ping-pong"; tail -n 5 "$tmp/pp.out"
fi
if timeout 60 "$run" sockperf throughput -i 127.0.0.1 -p "$port" --tcp -t 1 -m 1400 \
	>"$tmp/tp.out" 2>&1 && grep -q "Message Rate" "$tmp/tp.out" &&
	! grep -q "ERROR" "$tmp/tp.out" && over_rb2 "$tmp/tp.out"; then
	ok "sockperf throughput 1400 B: $(grep -o "Message Rate is [0-9]*" "$tmp/tp.out") msg/s;$(said "$tmp/tp.out")"
else
	fail "sockperf throughput"; tail -n 5 "$tmp/tp.out"
fi
kill "$spid"; wait "$spid" 2>/dev/null

# ---- PostgreSQL: a backend forked for each connection ------------------------
# The server accepts, forks a backend that serves the connection, and closes
# its own copy. postgres refuses to run as root: it runs as the user postgres,
# from copies of rb2-run and its library (the build tree may sit where that
# user cannot read), through root's service, which serves every user.
pg=$tmp/pg
mkdir -p "$pg/bin"
chmod 755 "$tmp"
cp "$run" "$build/lib/preload/librb2_preload.so" "$pg/bin/"
chown -R postgres "$pg"
as_pg() { setpriv --reuid=postgres --regid=postgres --clear-groups --reset-env \
	env RB2_SOCKD_PATH="$RB2_SOCKD_PATH" RB2_RUN_STATS=1 PATH=/usr/bin:/bin \
	RB2_PRELOAD_LIB="$pg/bin/librb2_preload.so" "$@"; }
port=$(free_port)
if ! as_pg "$pgbin/initdb" -D "$pg/data" -A trust -U postgres --no-sync >"$pg/initdb.out" 2>&1; then
	fail "PostgreSQL: initdb"; tail -n 5 "$pg/initdb.out"
fi
as_pg "$pg/bin/rb2-run" "$pgbin/postgres" -D "$pg/data" -k "$pg" -p "$port" \
	-c listen_addresses=127.0.0.1 -c fsync=off >"$pg/server.out" 2>&1 &
pgpid=$!
wait_port "$port" || fail "PostgreSQL did not start: $(tail -n 5 "$pg/server.out")"
# pgc SECONDS PROGRAM ARGS: a client of root's under rb2-run.
pgc() { timeout "$1" "$run" "$pgbin/$2" -h 127.0.0.1 -p "$port" -U postgres "${@:3}"; }
# TPC-B-like transactions from 8 clients; then every account's balance must
# sum to the history's deltas, read back over rb2 too.
if pgc 120 pgbench -i -q -s 1 postgres >"$pg/init.out" 2>&1 &&
	pgc 120 pgbench -c 8 -j 2 -T 3 postgres >"$pg/bench.out" 2>&1 &&
	grep -q "^number of failed transactions: 0 " "$pg/bench.out" &&
	over_rb2 "$pg/init.out" && over_rb2 "$pg/bench.out" 9 &&
	sums=$(pgc 60 psql -Atq -c "select (select sum(abalance) from pgbench_accounts) =
		(select sum(delta) from pgbench_history), count(*) from pgbench_history" postgres \
		2>"$pg/sums.err") && [[ $sums =~ ^t\|[1-9][0-9]*$ ]] && over_rb2 "$pg/sums.err"; then
	ok "PostgreSQL: pgbench, 8 clients, 3 s: $(grep -o "^tps = [0-9.]*" "$pg/bench.out"), none failed; balances match the history ($sums);$(said "$pg/bench.out")"
else
	fail "PostgreSQL: pgbench (sums: ${sums:-})"; tail -n 5 "$pg/init.out" "$pg/bench.out"
fi
# 1 MB stored, its md5 taken by the server, and the value read back: byte
# for byte both ways.
python3 - "$pg/blob.sql" "$pg/blob.want" <<'PY'
import hashlib, sys
v = "".join(hashlib.sha256(b"rb2-%d" % i).hexdigest() for i in range(1 << 15))
open(sys.argv[1], "w").write("create table blob(v text);\ninsert into blob values ('%s');\n"
                             "select md5(v) from blob;\nselect v from blob;\n" % v)
open(sys.argv[2], "w").write(hashlib.md5(v.encode()).hexdigest() + "\n" + v + "\n")
PY
if pgc 60 psql -Atq -v ON_ERROR_STOP=1 -f "$pg/blob.sql" postgres >"$pg/blob.got" \
	2>"$pg/blob.err" && cmp -s "$pg/blob.got" "$pg/blob.want" && over_rb2 "$pg/blob.err"; then
	ok "PostgreSQL: 2 MB stored and read back, whole both ways (the server's md5 matches)"
else
	fail "PostgreSQL: the stored value differs"; head -c 300 "$pg/blob.err"
fi
# The postmaster's line counts the connections it accepted; each backend's
# (a child's counts from its fork on) the bytes it moved on its own.
# SIGINT to the postmaster itself (a background job ignores it): a fast
# shutdown.
kill -INT "$(head -n 1 "$pg/data/postmaster.pid")"; wait "$pgpid"
moved=$(grep -h "^rb2-run: pid [0-9]*: 0 connections over rb2" "$pg/server.out" |
	awk '{b = substr($8, 2) + 0} b > 0 {n++; i += b; o += $11}
	     END {printf "%d backends: %d bytes in, %d out", n, i, o}')
if over_rb2 "$pg/server.out" 11 && [[ $moved =~ ^1[1-9]\ |^[2-9][0-9]\  ]]; then
	ok "PostgreSQL's server: $(grep -ho "[0-9]* connections over rb2" "$pg/server.out" | sort -n | tail -n 1) accepted, none failed; $moved"
else
	fail "PostgreSQL's server: $(grep -h "^rb2-run: pid" "$pg/server.out" | sort | uniq -c | head -5)"
fi

# ---- Faults --------------------------------------------------------------------
# The service is not in the data path: killed mid-stream, the transfer goes
# on, whole.
peer=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rb2run_peer.py
port=$(free_port)
timeout 60 "$run" python3 "$peer" server "$port" >"$tmp/fk.srv" 2>"$tmp/fk.srv.err" &
for _ in $(seq 400); do grep -q listening "$tmp/fk.srv" 2>/dev/null && break; sleep 0.05; done
pairs() { "$sockd" --stats | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
p0=$(pairs pairs)
timeout 60 "$run" python3 "$peer" client "$port" 30000000 >"$tmp/fk.cli" 2>"$tmp/fk.cli.err" &
cpid=$!
for _ in $(seq 100); do [ "$(pairs pairs)" -gt "$p0" ] && break; sleep 0.05; done
kill -9 "$(pairs pid)"          # once the connection is paired
wait "$cpid"; crc=$?
wait
if [ $crc = 0 ] && grep -q "up: whole, down: whole" "$tmp/fk.cli" && over_rb2 "$tmp/fk.cli.err"; then
	ok "rb2-sockd killed (SIGKILL) mid-stream: the 30 MB transfer went on over rb2, whole"
else
	fail "service killed mid-stream (rc $crc)"; cat "$tmp/fk.cli" "$tmp/fk.cli.err"
fi
# A program killed mid-stream: its peer reads the end within a bound, as
# over TCP (the kernel closes a dead process's sockets).
port=$(free_port)
timeout 60 "$run" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("listening", flush=True)
c, _ = s.accept(); n = 0
while True:
    try:
        d = c.recv(65536)
    except ConnectionResetError:
        print("reset after", n, flush=True); break
    if not d:
        print("end after", n, flush=True); break
    if n == 0:
        print("streaming", flush=True)
    n += len(d)' "$port" >"$tmp/kp.srv" 2>"$tmp/kp.srv.err" &
spid=$!
for _ in $(seq 400); do grep -q listening "$tmp/kp.srv" 2>/dev/null && break; sleep 0.05; done
"$run" python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
while True:
    c.sendall(b"z" * 4096)' "$port" 2>"$tmp/kp.cli.err" &
kpid=$!
# Killed once bytes flow: a client killed before its connect is a server
# that waits in accept, over TCP as well (slow starts under load do that).
for _ in $(seq 200); do grep -q streaming "$tmp/kp.srv" 2>/dev/null && break; sleep 0.05; done
sleep 0.2
t0=$(date +%s%N)
{ kill -9 "$kpid"; wait "$kpid"; } 2>/dev/null
wait "$spid"
dt=$((($(date +%s%N) - t0) / 1000000))
if grep -q "^\(end\|reset\) after [0-9]*" "$tmp/kp.srv" && [ $dt -lt 2000 ] &&
	grep -q " 1 connections over rb2" "$tmp/kp.srv.err"; then
	ok "a client killed mid-stream: its rb2 peer read the $(tail -n 1 "$tmp/kp.srv" | cut -d' ' -f1) $dt ms later ($(tail -n 1 "$tmp/kp.srv") bytes)"
else
	fail "killed client: '$(cat "$tmp/kp.srv")' after $dt ms"; cat "$tmp/kp.srv.err"
fi

echo "rb2-run apps: $fails failure(s)"
[ $fails -eq 0 ]
