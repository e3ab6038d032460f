#!/bin/sh
# Makes the compose fleet's .env: a copy of .env.example in which every placeholder secret (a value
# containing "change-me", which trawl refuses at start) is replaced by a random one.
#
#   sh scripts/setup-secrets.sh                                  # ./.env from ./.env.example
#   sh scripts/setup-secrets.sh --env-file FILE --example FILE
#
# Idempotent: an existing .env keeps every value that is not a placeholder (so a second run
# changes nothing, and a secret already in use is never rotated by accident); only placeholders
# left in it are replaced, and settings the example has but the file lacks are added. Random
# values are 48 hex digits (URL-safe, so they can go into REDIS_URL and DATABASE_URL). The file is
# written with mode 0600.
set -eu

env_file=.env
example=.env.example
while [ $# -gt 0 ]; do
  case "$1" in
    --env-file) env_file=$2; shift 2 ;;
    --example) example=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "setup-secrets: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -f "$example" ] || { echo "setup-secrets: no $example" >&2; exit 2; }

random() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
is_placeholder() { case "$1" in *[Cc][Hh][Aa][Nn][Gg][Ee]-[Mm][Ee]*) return 0 ;; *) return 1 ;; esac; }

umask 077
tmp=$(mktemp "${env_file}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
replaced=0

# Each line of the source: a comment or blank line as it is; a setting with its value kept, or a
# fresh random value when the value is a placeholder.
emit() { # line
  case "$1" in
    [A-Za-z_]*=*)
      key=${1%%=*}
      value=${1#*=}
      if is_placeholder "$value"; then
        printf '%s=%s\n' "$key" "$(random)"
        replaced=$((replaced + 1))
      else
        printf '%s\n' "$1"
      fi
      ;;
    *) printf '%s\n' "$1" ;;
  esac
}

if [ -f "$env_file" ]; then
  while IFS= read -r line || [ -n "$line" ]; do emit "$line"; done <"$env_file" >"$tmp"
  # Settings of the example the existing file does not have yet.
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      [A-Za-z_]*=*) grep -q "^${line%%=*}=" "$env_file" || emit "$line" ;;
    esac
  done <"$example" >>"$tmp"
else
  while IFS= read -r line || [ -n "$line" ]; do emit "$line"; done <"$example" >"$tmp"
fi

chmod 600 "$tmp"
mv "$tmp" "$env_file"
trap - EXIT
echo "setup-secrets: $env_file ready ($replaced placeholder secret(s) replaced)"
