#!/usr/bin/env bash
# Runs the whole test suite: installs what the tests need when it is missing (a real OCI
# registry, htpasswd and openssl for the image tests, rsvg-convert for the SVG pictures,
# Prometheus and promtool for the metrics tests, etcd for the control-plane tests,
# kubernetes-validate for the deploy/ files, graphql-core as a GraphQL client, podman and runc
# to run the catalog image as a cluster would, iproute2 for the OLM end-to-end test's private
# network, containerd and the rest of a real node for tests/it/olm_node),
# builds once (and a static copy of the binary for OLM's bundle unpack Job in
# tests/it/olm_node), and runs every test in parallel with cargo-nextest (plain `cargo test` where
# nextest is absent), after a short run of every fuzz target (scripts/fuzz-smoke.sh). Extra
# arguments go to the test runner.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v docker-registry >/dev/null || missing+=(docker-registry)
command -v htpasswd >/dev/null || missing+=(apache2-utils)
command -v openssl >/dev/null || missing+=(openssl)
command -v rsvg-convert >/dev/null || missing+=(librsvg2-bin)
command -v prometheus >/dev/null || missing+=(prometheus)
# etcd for the real control plane of tests/it/common/control_plane.rs.
command -v etcd >/dev/null || missing+=(etcd-server)
# operator-controller ships xz-compressed (tests/it/common/olmv1.rs unpacks it once); curl for
# control-plane.sh and ControlPlane::restart_apiserver's readiness checks.
command -v xz >/dev/null || missing+=(xz-utils)
command -v curl >/dev/null || missing+=(curl)
# tests/it/olm_e2e: `ip link set lo up` in the test's own network namespace.
command -v ip >/dev/null || missing+=(iproute2)
# tests/it/common/node.rs (node.sh of ../shared/tools/olm-e2e): containerd with runc, a bridge
# CNI, a sandbox image made from busybox, kube-proxy's iptables and conntrack (xz for the
# node's binaries is listed above).
command -v containerd >/dev/null || missing+=(containerd)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
[ -x /bin/busybox ] || missing+=(busybox-static)
command -v iptables >/dev/null || missing+=(iptables)
command -v conntrack >/dev/null || missing+=(conntrack)
# tests/it/container.rs: podman runs the catalog image with runc (crun refuses hybrid cgroup
# layouts); the rest is what podman uses for rootless runs and overlay storage without kernel
# support, installed too so that a developer who is not root can run the same test.
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v newuidmap >/dev/null || missing+=(uidmap)
command -v slirp4netns >/dev/null || missing+=(slirp4netns)
command -v fuse-overlayfs >/dev/null || missing+=(fuse-overlayfs)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing test dependencies: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Kubernetes' JSON schemas ship inside the package: validating needs no cluster and no network.
if ! command -v kubernetes-validate >/dev/null; then
  echo "installing test dependency: kubernetes-validate (PyPI)"
  python3 -m pip install -q kubernetes-validate
fi

# A standard GraphQL client for tests/it/catalogd_graphql.rs (builds its schema from our
# introspection answer and validates queries against it).
if ! python3 -c 'import graphql' 2>/dev/null; then
  echo "installing test dependency: graphql-core (PyPI)"
  python3 -m pip install -q graphql-core
fi

# First, so that the test runner's summary is the last thing printed.
bash scripts/fuzz-smoke.sh

# A static build of the binary for tests/it/olm_node: OLM's bundle unpack Job copies it out of
# our utility image as `cpb` and runs it in the bundle image, which has no loader or C library.
# Only the final crate gets the flag (dependencies are reused); the test build below then links
# the normal binary anew.
cargo rustc --bin olm-registry -- -C target-feature=+crt-static
cp target/debug/olm-registry target/olm-registry-static

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast "$@"
else
  cargo test --workspace --no-fail-fast "$@"
fi
