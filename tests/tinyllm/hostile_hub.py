#!/usr/bin/env python3
"""A Hub that lies, for tests/tinyllm/test_pull.sh: `hostile_hub.py PORTFILE`
serves on 127.0.0.1 (a free port, written to PORTFILE) the repos h/<case>,
each a tiny model (config.json, model.safetensors) whose API answers are
wrong the way <case> says:

  loop       the listing's next page is the page itself, for ever
  longpath   each listing page names one path of ~30 MB (valid segments)
  manynames  listing pages of 7,000 paths of 4,000 bytes each, for ever
  bigpage    a listing page that never ends
  escape     the revision's "sha" is 40 characters of terminal escapes
  moving     the branch moves to another commit after the first file (movingfiles: the
             same, for a pull of named files)
  stall      every API answer: the connection accepted, then silence
  bigindex   a model.safetensors.index.json of 65 MB
  dups       the listing names each file 500 times
  ratelimit  the listing answers 429 (Retry-After: 1) for its first 1.5 s
  longnext   the listing's first page, config.json alone, has a next URL of 5,000 bytes
  escname    the listing names a file with terminal escapes
  esccommit  X-Repo-Commit, on the files, is terminal escapes
  escindex   a safetensors index whose tensor, named with escapes, names "../x"
  gated      a gated repo whose conditions the token's account did not accept (401
             without a token, 403 with one, X-Error-Code: GatedRepo), as the Hub answers
"""
import functools
import hashlib
import http.server
import json
import os
import sys
import threading
import time

FILES = {"config.json": b'{"model_type": "llama"}\n', "model.safetensors": b"W" * 3000}
OLD, NEW = "a" * 40, "b" * 40
ESC = "\x1b]0;pwned\x07\x1b[2J"   # sets the terminal's title, clears the screen
heads = {}            # case -> HEADs of resolve URLs answered
first_tree = {}       # case -> when its listing was first asked
lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def big_index_files():
    """FILES with an index padded to 65 MB."""
    pad = b" " * (65 << 20)
    files = dict(FILES, **{"model.safetensors.index.json":
                           b'{"weight_map": {"a": "model.safetensors"}, "p": "%s"}' % pad})
    return files


@functools.lru_cache(maxsize=8)
def blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def silence(self):
        """Accepts the request, then sends nothing for an hour."""
        time.sleep(3600)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        parts = self.path.split("?")[0].split("/")
        if len(parts) < 5:
            return self.answer(404)
        api = parts[1] == "api"
        case = parts[4] if api else parts[2]
        with lock:
            moved = case.startswith("moving") and heads.get(case, 0) > 1
        files = big_index_files() if case == "bigindex" else FILES
        if case == "escindex":
            files = {"config.json": FILES["config.json"], "model.safetensors.index.json":
                     json.dumps({"weight_map": {ESC + "t": "../x"}}).encode()}
        if case == "gated":
            status = 403 if self.headers.get("Authorization") else 401
            return self.answer(status, b"{}", [("X-Error-Code", "GatedRepo")])
        if api and case == "stall":
            return self.silence()
        if api and parts[5] == "revision":
            sha = ESC + "x" * (40 - len(ESC)) if case == "escape" else \
                NEW if moved else OLD
            return self.answer(200, json.dumps({"sha": sha}).encode())
        if api and parts[5] == "tree":
            return self.tree(case, files)
        if parts[3] == "resolve" and "/".join(parts[5:]) in files:
            data = files["/".join(parts[5:])]
            if self.command == "HEAD":
                with lock:
                    heads[case] = heads.get(case, 0) + 1
            sha1 = blob_sha1(data)
            commit = ESC if case == "esccommit" else NEW if moved else OLD
            return self.answer(200, data, [("ETag", '"%s"' % sha1), ("X-Repo-Commit", commit)])
        self.answer(404, b"{}", [("X-Error-Code", "EntryNotFound")])

    def tree(self, case, files):
        listing = [{"type": "file", "path": p, "size": len(d)} for p, d in files.items()
                   if not (case == "bigindex" and p == "model.safetensors")]
        if case == "ratelimit":
            with lock:
                since = time.monotonic() - first_tree.setdefault(case, time.monotonic())
            if since < 1.5:
                return self.answer(429, b"{}", [("Retry-After", "1")])
        if case == "longnext":
            link = "<%s&cursor=%s>; rel=\"next\"" % (self.path, "c" * 5000)
            return self.answer(200, json.dumps(listing[:1]).encode(), [("Link", link)])
        if case == "escname":
            listing.append({"type": "file", "path": ESC + "x", "size": 1})
        if case == "dups":
            return self.answer(200, json.dumps(listing * 500).encode())
        if case == "loop":
            link = "<http://%s:%d%s>; rel=\"next\"" % (*self.server.server_address, self.path)
            return self.answer(200, json.dumps(listing).encode(), [("Link", link)])
        if case == "longpath":
            n = int(self.path.rsplit("page=", 1)[1]) if "page=" in self.path else 0
            path = "/".join(["a" * 250] * 120000) + "/%d" % n
            body = json.dumps([{"type": "file", "path": path, "size": 1}]).encode()
            link = "<%s&page=%d>; rel=\"next\"" % (self.path.split("&page=")[0], n + 1)
            return self.answer(200, body, [("Link", link)])
        if case == "manynames":
            n = int(self.path.rsplit("page=", 1)[1]) if "page=" in self.path else 0
            path = "/".join(["b" * 249] * 16)
            entry = json.dumps({"type": "file", "path": path, "size": 1}).encode()
            link = "<%s&page=%d>; rel=\"next\"" % (self.path.split("&page=")[0], n + 1)
            return self.answer(200, b"[" + b",".join([entry] * 7000) + b"]", [("Link", link)])
        if case == "bigpage":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
            try:
                self.wfile.write(b"1\r\n[\r\n")
                while True:
                    self.wfile.write(chunk)
            except OSError:
                return
        self.answer(200, json.dumps(listing).encode())


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(sys.argv[1] + ".tmp", "w") as f:   # renamed: the file appears whole
    f.write(str(server.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
