#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-http end to end:
#   - in one process, over each ring design and TCP: 1 KB files and
#     300 KB ones (answers of many messages), every body checked byte for
#     byte by the closed-loop client;
#   - the TCP front with stock clients: curl byte for byte, wrk for a few
#     seconds with no errors; every status (400 for malformed requests, the
#     smuggling shapes and oversized headers; 403 for paths out of the
#     directory: "..", encoded, symbolic links out; 404; 405; 413); a client
#     that never reads does not stall another; telemetry; generated bodies
#     (--generate), checked by curl against the generator and by the client;
#   - through rb2-raasd (needs hugepages: skipped without, and said so):
#     the rb2 client fetches every file byte for byte on 8 connections.
#
#   test_http.sh BUILD_DIR
build=$1
http=$build/apps/rb2-http/rb2-http
pfx=rb2t-http-$$
. "$(dirname "$0")/case_study_lib.sh"

# 1. Every design, small and large files.
for shape in "1024 16 20000" "300000 3 300"; do
	set -- $shape
	if $http $(eal 0-1 b$1) -- bench --file-size $1 --file-count $2 --requests $3 --rounds 1 \
		--conns 4 >"$tmp/bench-$1" 2>&1; then
		ok "bench: $3 GETs of $1-byte files on each ring design and TCP, every body checked"
	else
		fail "bench with $1-byte files"; cat "$tmp/bench-$1"
	fi
done

# 2. The TCP front.
www=$tmp/www
mkdir -p "$www/sub"
echo "<h1>rb2</h1>" >"$www/index.html"
head -c 1024 /dev/urandom >"$www/one.bin"
head -c 2000000 /dev/urandom >"$www/two-megabytes.bin"
echo secret >"$tmp/secret"
# Links only below the top level: the clients' --files takes the top level.
ln -s "$tmp/secret" "$www/sub/out-link"
ln -s ../index.html "$www/sub/in-link"
port=$(free_port)
( trap - EXIT; exec $http $(eal 1 srv) -- server --no-rb2 --tcp 127.0.0.1:$port --root "$www" \
	>"$tmp/server" 2>&1 ) &
srv=$!; pids+=("$srv")
for _ in $(seq 100); do grep -q "serving" "$tmp/server" && break; sleep 0.05; done
grep -q "serving" "$tmp/server" || { echo "rb2-http did not start:"; cat "$tmp/server"; exit 1; }
url=http://127.0.0.1:$port

rc=0
for f in index.html one.bin two-megabytes.bin sub/in-link; do
	curl -sf -o "$tmp/got" "$url/$f" && cmp -s "$tmp/got" "$www/$f" || { rc=1; echo "curl $f differs"; }
done
[ $rc -eq 0 ] && ok "curl: four files (up to 2 MB, one through a link inside) byte for byte" ||
	fail "curl downloads"

code() { curl -s -o /dev/null -w '%{http_code}' --path-as-is "$@"; }
rc=0
for c in "403 $url/sub/out-link" "403 $url/../secret" "403 $url/%2e%2e/secret" \
	 "403 $url/sub/%2E%2E/%2e%2e/secret" "404 $url/nothing" "400 $url/a%00b" \
	 "405 -X POST -d x $url/" "405 -X DELETE $url/one.bin" "200 -I $url/one.bin"; do
	set -- $c
	want=$1; shift
	got=$(code "$@")
	[ "$got" = "$want" ] || { echo "curl $*: $got, expected $want"; rc=1; }
done
[ $rc -eq 0 ] && ok "paths out of the directory 403 (.., encoded, a symbolic link out); 404, 400, 405, HEAD" ||
	fail "statuses"

if command -v wrk >/dev/null; then
	wrk -t1 -c8 -d3s "$url/one.bin" >"$tmp/wrk" 2>&1
	if grep -q "Requests/sec" "$tmp/wrk" && ! grep -q "Non-2xx\|Socket errors" "$tmp/wrk"; then
		ok "wrk: 8 connections for 3 s, no errors ($(awk '/Requests\/sec/ {print $2}' "$tmp/wrk") requests/s)"
	else
		fail "wrk"; cat "$tmp/wrk"
	fi
else
	echo "note: wrk not found (Debian's wrk): not run"
fi

if python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
def ask(data, read=True):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
    try:
        s.sendall(data)
    except OSError:
        pass
    out = b""
    while read:
        try:
            c = s.recv(65536)
        except OSError:
            break
        if not c:
            break
        out += c
    return out
def status(data):
    return ask(data).split(b"\r\n")[0].decode()
cases = [
    (b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "400"),
    (b"GET / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"),
    (b"GET / HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n", "400"),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", "400"),
    (b"NOT HTTP AT ALL\r\n\r\n", "400"),
    (b"GET / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n", "413"),
    (b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
     (b"ffff\r\n" + b"a" * 65535 + b"\r\n") * 3 + b"0\r\n\r\n", "413"),
]
for data, want in cases:
    got = status(data)
    assert got.split(" ")[1] == want, (data[:50], got, want)
# Keep-alive and pipelining: answers on one connection, in order; a HEAD's
# answer, even an error's, has no body to confuse the next one.
out = ask(b"GET /index.html HTTP/1.1\r\n\r\nHEAD /nothing HTTP/1.1\r\n\r\n"
          b"GET /nothing HTTP/1.1\r\nConnection: close\r\n\r\n")
parts = out.split(b"HTTP/1.1 ")
assert [p[:3] for p in parts[1:]] == [b"200", b"404", b"404"], out[:400]
assert parts[2].endswith(b"\r\n\r\n"), parts[2]
# The parser carries on from one request to the next on a connection (it is
# un-paused, not re-created): a smuggling shape after a good request is
# still refused.
out = ask(b"GET /index.html HTTP/1.1\r\n\r\n"
          b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
parts = out.split(b"HTTP/1.1 ")
assert [p[:3] for p in parts[1:]] == [b"200", b"400"], out[:400]
# A slow client: many pipelined GETs of 2 MB, nothing read; another is
# served meanwhile.
slow = socket.create_connection(("127.0.0.1", port))
slow.sendall(b"GET /two-megabytes.bin HTTP/1.1\r\n\r\n" * 50)
t0 = time.time()
for i in range(100):
    assert ask(b"GET /one.bin HTTP/1.1\r\nConnection: close\r\n\r\n").startswith(b"HTTP/1.1 200")
assert time.time() - t0 < 5, "the other client waited"
print("malformed, smuggling shapes, oversized: 400/413; pipelining; a slow reader stalls nobody")
PY
then ok "malformed requests, smuggling shapes, oversized headers and bodies: 400/413; pipelining; a client that never reads stalls nobody"
else fail "protocol checks"; fi

if $http $(eal 0 cli) -- client --tcp 127.0.0.1:$port --files "$www" --conns 4 --requests 2000 \
	--quiet >"$tmp/client-tcp" 2>&1; then
	ok "the rb2-http client over TCP: 2000 GETs, every body byte for byte ($(grep -o '[0-9]* QPS' "$tmp/client-tcp"))"
else
	fail "client over TCP"; cat "$tmp/client-tcp"
fi
tel=$(command -v dpdk-telemetry.py || true)
if [ -n "$tel" ]; then
	echo /rb2/http/stats | python3 "$tel" -f "${pfx}srv" >"$tmp/tel" 2>&1
	if python3 -c '
import json, re, sys
d = [json.loads(m) for m in re.findall(r"^\{.*\}$", open(sys.argv[1]).read(), re.M)]
st = next(x["/rb2/http/stats"] for x in d if "/rb2/http/stats" in x)
print("telemetry:", st)
assert st["status_200"] > 2000 and st["status_403"] >= 4 and st["status_413"] >= 2' "$tmp/tel"; then
		ok "telemetry: /rb2/http/stats counts every status"
	else fail "telemetry"; cat "$tmp/tel"; fi
fi
# The client's check of a generated body can fail: this server has no
# --generate, and its gen/5000 is a file of other bytes.
mkdir -p "$www/gen" && head -c 5000 /dev/urandom >"$www/gen/5000"
if $http $(eal 0 cg0) -- client --tcp 127.0.0.1:$port --path /gen/5000 --requests 10 --quiet \
	>"$tmp/client-gen0" 2>&1 || ! grep -q "10 bad body" "$tmp/client-gen0"; then
	fail "a wrong generated body went unnoticed"; cat "$tmp/client-gen0"
fi
kill -INT "$srv"; wait "$srv"

# Generated bodies, no directory: /gen/N is N bytes of http_gen_fill()'s.
port=$(free_port)
( trap - EXIT; exec $http $(eal 1 gsrv) -- server --no-rb2 --tcp 127.0.0.1:$port \
	--generate 4000000 >"$tmp/gserver" 2>&1 ) &
gsrv=$!; pids+=("$gsrv")
for _ in $(seq 100); do grep -q "serving" "$tmp/gserver" && break; sleep 0.05; done
url=http://127.0.0.1:$port
python3 -c '
import sys
n = int(sys.argv[1])
sys.stdout.buffer.write(bytes(10 if i % 64 == 63 else 97 + (i * 7 + n) % 26 for i in range(n)))' \
	100000 >"$tmp/gen-want"
rc=0
curl -sf -o "$tmp/gen-got" "$url/gen/100000" && cmp -s "$tmp/gen-got" "$tmp/gen-want" ||
	{ rc=1; echo "curl /gen/100000 differs from the generator"; }
for c in "200 $url/gen/0" "413 $url/gen/4000001" "404 $url/gen/12x" "404 $url/gen/" \
	 "404 $url/index.html"; do
	set -- $c
	want=$1; shift
	got=$(code "$@")
	[ "$got" = "$want" ] || { echo "curl $*: $got, expected $want"; rc=1; }
done
if ! $http $(eal 0 cg1) -- client --tcp 127.0.0.1:$port --path /gen/300000 --conns 2 \
	--requests 200 --quiet >"$tmp/client-gen" 2>&1; then
	rc=1; cat "$tmp/client-gen"
fi
[ $rc -eq 0 ] && ok "generated bodies (--generate, no directory): curl and the client check them byte for byte; 413 over the limit, 404 for what is not a size" ||
	fail "generated bodies"
kill -INT "$gsrv"; wait "$gsrv"

# 3. Through the host service.
if ! have_hugepages; then
	echo "SKIP (part 3 only): DPDK multi-process needs hugepages: as root, usertools/rb2-hugepages.sh 1024"
	[ $fails -eq 0 ]; exit
fi
start_raasd
( trap - EXIT; exec $http $(sec 1) -- server --port 8080 --root "$www" >"$tmp/rserver" 2>&1 ) &
pids+=("$!")
for _ in $(seq 200); do grep -q "serving" "$tmp/rserver" && break; sleep 0.05; done
if $http $(sec 0) -- client --port 8080 --files "$www" --conns 8 --requests 300 --quiet \
	>"$tmp/rclient" 2>&1; then
	ok "through rb2-raasd: 300 GETs on 8 connections, every body byte for byte (2 MB ones too)"
else
	fail "through rb2-raasd"; cat "$tmp/rclient" "$tmp/rserver" "$tmp/raasd"
fi

[ $fails -eq 0 ]
