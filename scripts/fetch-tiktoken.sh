#!/usr/bin/env bash
# Fetches the tokenizer reference (OpenAI's tiktoken, the WASM build of its Rust core in the
# npm package tiktoken@1.0.22, which ships o200k_base) and prints its directory on stdout
# (progress on stderr).
#
#   scripts/fetch-tiktoken.sh          fetch, or print the cached result
#
# Layout of the printed directory:
#   o200k_base.tiktoken  the o200k_base ranks in tiktoken's file format (one line per token:
#                        its bytes in base64, a space, its rank); jal-run and jal-mkmodel
#                        embed it (docs/decisions.md)
#   encode.cjs           node encode.cjs < strings.json > ids.json: a JSON array of strings
#                        to a JSON array of token-id arrays, with o200k_harmony (o200k_base
#                        and the harmony special tokens), every string as plain text
#                        (encode_ordinary: special-token literals are ordinary text)
#   node_modules/        the npm package encode.cjs loads
#   VERSION              the package version and the layout's revision
#
# The result is cached outside the repository:
#   ${JAL_TIKTOKEN_REF:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/tiktoken-ref-1.0.22}
# When that exists the script prints it and does nothing else (no network). Needs node
# and npm (scripts/setup.sh installs them) and the npm registry.
set -euo pipefail

version=1.0.22
. "$(dirname "$0")/lib/npm_cache.sh"
# Bump the revision when the layout or encode.cjs changes.
npm_cache_begin fetch-tiktoken \
  "${JAL_TIKTOKEN_REF:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/tiktoken-ref-$version}" \
  "$version r1" "$@"
npm_cache_install "$work/out" "tiktoken@$version"
encoder=$work/out/node_modules/tiktoken/encoders/o200k_base.json
[[ -f $encoder ]] || { log "unexpected package layout"; exit 1; }
rm -f "$work/out/package.json" "$work/out/package-lock.json"

# The package stores the ranks compactly: lines of "<first token> <first rank> <base64
# tokens...>" with consecutive ranks. Expand them to tiktoken's own file format.
log "writing o200k_base.tiktoken"
node -e '
  const fs = require("fs");
  const enc = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  const out = [];
  for (const line of enc.bpe_ranks.split("\n")) {
    if (!line) continue;
    const [, first, ...tokens] = line.split(" ");
    tokens.forEach((t, i) => out.push(`${t} ${Number(first) + i}`));
  }
  fs.writeFileSync(process.argv[2], out.join("\n") + "\n");
' "$encoder" "$work/out/o200k_base.tiktoken"

cat >"$work/out/encode.cjs" <<'EOF'
// A JSON array of strings on stdin -> a JSON array of token-id arrays on stdout, encoded by
// tiktoken with o200k_harmony (o200k_base plus the harmony special tokens 199998..201087),
// every string as plain text (encode_ordinary), as a user's text is encoded.
const fs = require("fs");
const path = require("path");
const { Tiktoken } = require(path.join(__dirname, "node_modules/tiktoken/lite/tiktoken.cjs"));
const enc = require(path.join(__dirname, "node_modules/tiktoken/encoders/o200k_base.json"));
const named = { 199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>",
  200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
  200008: "<|message|>", 200012: "<|call|>", 200018: "<|endofprompt|>" };
const specials = {};
for (let id = 199998; id < 201088; id++) specials[named[id] || `<|reserved_${id}|>`] = id;
const tk = new Tiktoken(enc.bpe_ranks, specials, enc.pat_str);
const input = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(input.map((s) => Array.from(tk.encode_ordinary(s)))));
EOF
npm_cache_finish "$work/out"
