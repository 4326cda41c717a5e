// The official JavaScript client, @huggingface/hub (pinned in package.json),
// against `tl-hub serve`: modelInfo, listFiles (recursive, through Link
// pages), downloadFile and snapshotDownload, the bytes compared with the
// served files. Usage: node clients.mjs ENDPOINT REPOS_DIR COMMIT CACHE_DIR
// (COMMIT: the one tl-hub reports for org/tiny at main). Prints
// "js client: N passed, M failed".
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, statSync, existsSync, realpathSync } from "node:fs";
import { join, relative } from "node:path";
import { downloadFile, listFiles, modelInfo, snapshotDownload } from "@huggingface/hub";

const [hubUrl, reposDir, commit, cacheDir] = process.argv.slice(2);
let passed = 0, failed = 0;
function check(name, ok, detail = "") {
  if (ok) passed++;
  else {
    failed++;
    console.log(`FAIL ${name}${detail ? ": " + detail : ""}`);
  }
}
async function attempt(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, `${e.name}: ${e.message}`);
  }
}

// The files served for repo (relative path -> bytes), read from disk here.
function servedFiles(repo) {
  const root = join(reposDir, repo), out = new Map();
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.set(relative(root, full), readFileSync(full));
    }
  };
  walk(root);
  return out;
}
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const lfsThreshold = Number(process.env.LFS_THRESHOLD);

for (const repo of ["org/tiny", "org/sharded"]) {
  const served = servedFiles(repo);

  await attempt(`modelInfo ${repo}`, async () => {
    const info = await modelInfo({ name: repo, hubUrl, additionalFields: ["sha", "siblings"] });
    check(`modelInfo ${repo}: name`, info.name === repo, info.name);
    check(`modelInfo ${repo}: private, gated`, info.private === false && info.gated === false);
    check(`modelInfo ${repo}: updatedAt`, !isNaN(info.updatedAt.getTime()));
    check(`modelInfo ${repo}: sha`, /^[0-9a-f]{40}$/.test(info.sha) &&
          (repo !== "org/tiny" || info.sha === commit), info.sha);
    const names = info.siblings.map((s) => s.rfilename).sort();
    check(`modelInfo ${repo}: siblings`, JSON.stringify(names) ===
          JSON.stringify([...served.keys()].sort()), names.join(" "));
  });

  await attempt(`listFiles ${repo}`, async () => {
    const files = new Map(), dirs = new Set();
    for await (const e of listFiles({ repo, hubUrl, recursive: true })) {
      if (e.type === "directory") dirs.add(e.path);
      else files.set(e.path, e);
    }
    check(`listFiles ${repo}: every file once`, files.size === served.size &&
          [...served.keys()].every((p) => files.has(p)), [...files.keys()].join(" "));
    for (const [path, bytes] of served) {
      const e = files.get(path);
      if (!e) continue;
      check(`listFiles ${repo}: ${path} size`, e.size === bytes.length, `${e.size}`);
      if (bytes.length >= lfsThreshold)
        check(`listFiles ${repo}: ${path} lfs`, e.lfs && e.lfs.oid === sha256(bytes) &&
              e.lfs.size === bytes.length, JSON.stringify(e.lfs));
      else check(`listFiles ${repo}: ${path} not lfs`, !e.lfs);
      const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : null;
      if (folder) check(`listFiles ${repo}: folder ${folder}`, dirs.has(folder));
    }
  });

  for (const [path, bytes] of served) {
    await attempt(`downloadFile ${repo} ${path}`, async () => {
      try {
        const blob = await downloadFile({ repo, path, hubUrl });
        const got = Buffer.from(await blob.arrayBuffer());
        check(`downloadFile ${repo} ${path}`, bytes.length > 0 && got.equals(bytes),
              `${got.length} bytes, expected ${bytes.length}`);
      } catch (e) {
        // The client sizes a file with a "Range: bytes=0-0" probe, which an
        // empty file cannot satisfy (RFC 9110: 416): this client cannot fetch
        // a 0-byte git file from a server that follows the RFC.
        check(`downloadFile ${repo} ${path}: a 0-byte file is the client's 416`,
              bytes.length === 0 && e.statusCode === 416, `${e.message}`);
      }
    });
  }
  const missing = await downloadFile({ repo, path: "no/such/file", hubUrl });
  check(`downloadFile ${repo}: a missing file is null (EntryNotFound)`, missing === null);
}

// snapshotDownload: info (sha), listFiles at the commit, paths-info and
// downloadFile for each file, into a cache of blobs and snapshot links. Run
// on the repo without a 0-byte file (see above), twice: the second finds
// everything cached.
await attempt("snapshotDownload org/sharded", async () => {
  const served = servedFiles("org/sharded");
  for (let run = 0; run < 2; run++) {
    const folder = await snapshotDownload({ repo: "org/sharded", hubUrl, cacheDir });
    for (const [path, bytes] of served) {
      const file = join(folder, path);
      check(`snapshotDownload run ${run}: ${path}`, existsSync(file) &&
            readFileSync(realpathSync(file)).equals(bytes));
    }
  }
});

// A renamed repo (tl-hub serve --rename org/old-tiny=org/tiny): the client's
// fetch follows the Hub's relative 307s, for the listing and for a file.
await attempt("renamed repo org/old-tiny", async () => {
  const served = servedFiles("org/tiny");
  const files = new Set();
  for await (const e of listFiles({ repo: "org/old-tiny", hubUrl, recursive: true }))
    if (e.type === "file") files.add(e.path);
  check("listFiles org/old-tiny: org/tiny's files", files.size === served.size &&
        [...served.keys()].every((p) => files.has(p)), [...files].join(","));
  const blob = await downloadFile({ repo: "org/old-tiny", path: "config.json", hubUrl });
  check("downloadFile org/old-tiny config.json", blob !== null &&
        Buffer.from(await blob.arrayBuffer()).equals(served.get("config.json")));
});

console.log(`js client: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
