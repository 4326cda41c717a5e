"""The Python client, huggingface_hub, against `tl-hub serve` (issue 10): the
calls most users make, checked against the served files. Not run by make
test (huggingface_hub is not a Debian package and cannot be installed from
here); run by hand as tools/hub/README.md says, with the client's source on
PYTHONPATH and HF_ENDPOINT set. Usage: python_client.py REPOS_DIR"""
import hashlib
import os
import sys

import huggingface_hub
from huggingface_hub import HfApi, hf_hub_download, list_repo_files, snapshot_download

repos = sys.argv[1]
api = HfApi()
failed = passed = 0


def check(name, ok, detail=""):
    global failed, passed
    passed += bool(ok)
    failed += not ok
    if not ok:
        print(f"FAIL {name}: {detail}")


def served(repo):
    root = os.path.join(repos, repo)
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root) for f in files}


for repo in ["org/tiny", "org/sharded"]:
    files = served(repo)
    info = api.model_info(repo)
    check(f"model_info {repo}", info.id == repo and len(info.sha) == 40 and
          sorted(s.rfilename for s in info.siblings) == sorted(files), info)
    meta = api.model_info(repo, files_metadata=True)
    for s in meta.siblings:
        want = files[s.rfilename]
        check(f"model_info(files_metadata) {s.rfilename}", s.size == len(want) and
              (s.lfs is None or s.lfs.sha256 == hashlib.sha256(want).hexdigest()), s)
    check(f"list_repo_files {repo}", sorted(list_repo_files(repo)) == sorted(files))
    tree = list(api.list_repo_tree(repo, recursive=True))
    check(f"list_repo_tree {repo}", sorted(e.path for e in tree if hasattr(e, "size")
                                           and hasattr(e, "blob_id")) == sorted(files))
    for path, want in files.items():
        got = open(hf_hub_download(repo, path), "rb").read()
        check(f"hf_hub_download {repo} {path}", got == want, len(got))
    folder = snapshot_download(repo)
    for path, want in files.items():
        check(f"snapshot_download {repo} {path}",
              open(os.path.join(folder, path), "rb").read() == want)
    paths = api.get_paths_info(repo, list(files)[:2])
    check(f"get_paths_info {repo}", sorted(p.path for p in paths) == sorted(list(files)[:2]))

# A renamed repo (tl-hub serve --rename org/old-tiny=org/tiny): the client
# follows the Hub's relative 307s, for the API and for the files.
files = served("org/tiny")
check("list_repo_files org/old-tiny", sorted(list_repo_files("org/old-tiny")) == sorted(files))
for path, want in files.items():
    got = open(hf_hub_download("org/old-tiny", path), "rb").read()
    check(f"hf_hub_download org/old-tiny {path}", got == want, len(got))

print(f"huggingface_hub {huggingface_hub.__version__}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
