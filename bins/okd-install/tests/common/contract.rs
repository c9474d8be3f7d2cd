//! Contract images (issue #20 item 3): an OKD/OCP payload whose operator
//! images are small stand-ins that check the arguments and mounts
//! bootkube's render stages give them and write the outputs each operator
//! documents, so the OpenShift render path of `okd-install bootstrap
//! bootkube` is tested with podman without the operators themselves
//! (their images and Go modules cannot be fetched here).
//!
//! Every contract image holds Debian's static busybox and one shell script
//! ([`CONTRACT_SCRIPT`]) installed under each program path bootkube runs
//! (`/usr/bin/cluster-etcd-operator`, `/usr/bin/render`, …); images that
//! bootkube runs by entrypoint (the release's cluster-version-operator,
//! ingress, machine-config and cloud-credential operators) have that
//! entrypoint. The script records what it got in
//! `/assets/contract/<program>.args` and fails (exit 3, the reason on
//! stderr) when an argument or an input is missing, or when the test put
//! `/assets/contract/fail-<program>` there (a render that fails).
//!
//! The contract itself is the argument list and the outputs of
//! openshift/installer `bootkube.sh.template` and the installer reference
//! §8; the expected values are written into the script here, not taken
//! from okd-install's own code.
#![allow(dead_code)]

use std::path::Path;

use super::payload::{self, Payload};

/// The contract script (busybox `sh`); `@VERSION@`, `@ETCD@`,
/// `@HYPERKUBE@` and `@CPC@` are replaced by the payload's version and
/// the etcd, hyperkube and cluster-policy-controller pull specs.
pub const CONTRACT_SCRIPT: &str = r#"#!/bin/busybox sh
# A contract image of okd-install's tests: stands in for an OpenShift
# operator's render, checks what bootkube gives it, writes what the
# operator documents.
/bin/busybox mkdir -p /tmp/bin && /bin/busybox --install -s /tmp/bin || exit 90
export PATH=/tmp/bin
prog=$(basename "$0")
[ "$prog" = render ] && prog=cluster-config-api
ARGS="$*"
fail() { echo "contract $prog: $*" >&2; exit 3; }
has() {
    for a in "$@"; do
        case " $ARGS " in *" $a "*) ;; *) fail "missing argument $a (got: $ARGS)" ;; esac
    done
}
has_prefix() {
    case " $ARGS " in *" $1"*) ;; *) fail "missing argument $1… (got: $ARGS)" ;; esac
}
need() { for f in "$@"; do [ -e "$f" ] || fail "missing input $f"; done; }
out() { mkdir -p "$(dirname "$1")" && cat >"$1"; }
[ -f /assets/auth/kubeconfig-loopback ] || fail "/assets is not the asset directory"
[ -d /assets/tls ] || fail "/assets/tls is missing"
mkdir -p /assets/contract
if [ -f "/assets/contract/fail-$prog" ]; then fail "$(cat "/assets/contract/fail-$prog")"; fi
{ echo "$ARGS"; echo "uid $(id -u)"; } >"/assets/contract/$prog.args"
V=--payload-version=@VERSION@
M=/assets/manifests
case "$prog" in
cluster-config-api)
    has --asset-output-dir=/assets/api-bootstrap --rendered-manifest-dir=$M \
        --cluster-profile=self-managed-high-availability $V
    need $M/cluster-config.yaml
    out /assets/api-bootstrap/0000_03_config-operator_01_proxies.crd.yaml <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: proxies.config.openshift.io}
EOF
    ;;
authentication-operator)
    has render --asset-output-dir=/assets/auth-api-bootstrap --rendered-manifest-dir=$M \
        --cluster-profile=self-managed-high-availability $V
    out /assets/auth-api-bootstrap/authorization.openshift.io_rolebindingrestrictions.yaml <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: rolebindingrestrictions.authorization.openshift.io}
EOF
    ;;
cluster-config-operator)
    has render --cluster-infrastructure-input-file=$M/cluster-infrastructure-02-config.yml \
        --cloud-provider-config-output-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml \
        --config-output-file=/assets/config-bootstrap/config --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/config-bootstrap --skip-api-rendering \
        --rendered-manifest-files=$M $V
    need $M/cluster-infrastructure-02-config.yml /assets/tls/root-ca.crt
    echo "kind: GenericOperatorConfig" | out /assets/config-bootstrap/config
    out /assets/config-bootstrap/manifests/cluster-authentication-02-config.yaml <<EOF
apiVersion: config.openshift.io/v1
kind: Authentication
metadata: {name: cluster}
EOF
    ;;
cluster-version-operator)
    has render --output-dir=/assets/cvo-bootstrap \
        --feature-gate-manifest-path=$M/99_feature-gate.yaml
    has_prefix --release-image=quay.io/openshift/okd@sha256:
    need $M/99_feature-gate.yaml
    out /assets/cvo-bootstrap/bootstrap/cluster-version-operator-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bootstrap-cluster-version-operator, namespace: openshift-cluster-version}
EOF
    out /assets/cvo-bootstrap/manifests/0000_00_cluster-version-operator_00_namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-cluster-version}
EOF
    ;;
cluster-etcd-operator)
    if [ "$1" = wait-for-ceo ]; then
        has --kubeconfig /assets/auth/kubeconfig
        exit 0
    fi
    has render --asset-output-dir=/assets/etcd-bootstrap \
        --cluster-configmap-file=$M/cluster-config.yaml --etcd-image=@ETCD@ \
        --infra-config-file=$M/cluster-infrastructure-02-config.yml \
        --network-config-file=$M/cluster-network-02-config.yml
    need $M/cluster-config.yaml $M/cluster-network-02-config.yml
    # The etcd operator makes the etcd signer and its bundle itself.
    printf -- '-----BEGIN CERTIFICATE-----\ncontract etcd CA\n-----END CERTIFICATE-----\n' >/tmp/etcd-ca.crt
    out /assets/etcd-bootstrap/etc-kubernetes/manifests/etcd-member-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: etcd-bootstrap-member, namespace: openshift-etcd}
spec:
  containers: [{name: etcd, image: "@ETCD@"}]
EOF
    out /assets/etcd-bootstrap/etc-kubernetes/static-pod-resources/etcd-member/ca.crt </tmp/etcd-ca.crt
    out /assets/etcd-bootstrap/manifests/0000_12_etcd-operator_01_namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-etcd}
EOF
    out /assets/etcd-bootstrap/tls/etcd-ca-bundle.crt </tmp/etcd-ca.crt
    ;;
cluster-kube-apiserver-operator)
    has render --manifest-etcd-serving-ca=etcd-ca-bundle.crt \
        --manifest-etcd-server-urls=https://localhost:2379 --manifest-image=@HYPERKUBE@ \
        --asset-input-dir=/assets/tls --asset-output-dir=/assets/kube-apiserver-bootstrap \
        --config-output-file=/assets/kube-apiserver-bootstrap/config \
        --cluster-config-file=$M/cluster-network-02-config.yml \
        --cluster-auth-file=$M/cluster-authentication-02-config.yaml \
        --infra-config-file=$M/cluster-infrastructure-02-config.yml \
        --rendered-manifest-files=$M $V
    has_prefix --manifest-operator-image=quay.io/openshift/okd-content@sha256:
    # config-bootstrap's and etcd-bootstrap's outputs, copied by bootkube.
    need $M/cluster-authentication-02-config.yaml /assets/tls/etcd-ca-bundle.crt
    grep -q "contract etcd CA" /assets/tls/etcd-ca-bundle.crt || fail "tls/etcd-ca-bundle.crt is not the etcd render's"
    echo "kind: KubeAPIServerConfig" | out /assets/kube-apiserver-bootstrap/config
    out /assets/kube-apiserver-bootstrap/bootstrap-manifests/kube-apiserver-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bootstrap-kube-apiserver, namespace: kube-system}
spec:
  containers: [{name: kube-apiserver, image: "@HYPERKUBE@"}]
EOF
    out /assets/kube-apiserver-bootstrap/manifests/0000_20_kube-apiserver-operator_00_namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-kube-apiserver}
EOF
    ;;
cluster-kube-controller-manager-operator)
    has render --cluster-policy-controller-image=@CPC@ --manifest-image=@HYPERKUBE@ \
        --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/kube-controller-manager-bootstrap \
        --config-output-file=/assets/kube-controller-manager-bootstrap/config \
        --cpc-config-output-file=/assets/kube-controller-manager-bootstrap/cpc-config \
        --cluster-config-file=$M/cluster-network-02-config.yml --rendered-manifest-files=$M $V
    echo "kind: KubeControllerManagerConfig" | out /assets/kube-controller-manager-bootstrap/config
    echo "kind: ClusterPolicyControllerConfig" | out /assets/kube-controller-manager-bootstrap/cpc-config
    out /assets/kube-controller-manager-bootstrap/bootstrap-manifests/kube-controller-manager-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bootstrap-kube-controller-manager, namespace: kube-system}
EOF
    out /assets/kube-controller-manager-bootstrap/manifests/0000_25_kube-controller-manager-operator_00_namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-kube-controller-manager}
EOF
    echo "contract service-account public key" | out /assets/kube-controller-manager-bootstrap/tls/service-account.pub
    ;;
cluster-kube-scheduler-operator)
    has render --manifest-image=@HYPERKUBE@ --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/kube-scheduler-bootstrap \
        --config-output-file=/assets/kube-scheduler-bootstrap/config --rendered-manifest-files=$M $V
    echo "kind: KubeSchedulerConfiguration" | out /assets/kube-scheduler-bootstrap/config
    out /assets/kube-scheduler-bootstrap/bootstrap-manifests/kube-scheduler-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bootstrap-kube-scheduler, namespace: kube-system}
EOF
    out /assets/kube-scheduler-bootstrap/manifests/0000_25_kube-scheduler-operator_00_namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-kube-scheduler}
EOF
    ;;
ingress-operator)
    has render --prefix=cluster-ingress- --output-dir=/assets/ingress-operator-manifests
    out /assets/ingress-operator-manifests/cluster-ingress-00-namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-ingress-operator}
EOF
    ;;
cluster-node-tuning-operator)
    has render --asset-input-dir=$M --asset-output-dir=/assets/node-tuning-bootstrap
    # No PerformanceProfile in the manifests: nothing to render.
    mkdir -p /assets/node-tuning-bootstrap
    ;;
machine-config-operator)
    has bootstrap --root-ca=/assets/tls/root-ca.crt \
        --kube-ca=/assets/tls/kube-apiserver-complete-client-ca-bundle.crt \
        --config-file=$M/cluster-config.yaml --dest-dir=/assets/mco-bootstrap \
        --pull-secret=$M/openshift-config-secret-pull-secret.yaml \
        --image-references=/assets/image-references $V
    has_prefix --release-image=quay.io/openshift/okd@sha256:
    [ "$(id -u)" = 0 ] || fail "not run as root (bootkube passes --user 0)"
    need /assets/tls/root-ca.crt $M/openshift-config-secret-pull-secret.yaml
    grep -q '"@ETCD@"' /assets/image-references || fail "/assets/image-references does not name @ETCD@"
    out /assets/mco-bootstrap/bootstrap/manifests/machineconfigpool-master.yaml <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: master}
EOF
    out /assets/mco-bootstrap/bootstrap/machineconfigoperator-bootstrap-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bootstrap-machine-config-operator, namespace: default}
EOF
    out /assets/mco-bootstrap/baremetal/manifests/keepalived.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: keepalived, namespace: openshift-kni-infra}
EOF
    echo "vrrp_instance contract {}" |
        out /assets/mco-bootstrap/baremetal/static-pod-resources/keepalived/keepalived.conf.tmpl
    out /assets/mco-bootstrap/manifests/machineconfigcontroller-controllerconfig.yaml <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata: {name: machine-config-controller}
EOF
    ;;
cloud-credential-operator)
    has render --dest-dir=/assets/cco-bootstrap --manifests-dir=$M
    has_prefix --cloud-credential-operator-image=quay.io/openshift/okd-content@sha256:
    [ "$(id -u)" = 0 ] || fail "not run as root (bootkube passes --user 0)"
    out /assets/cco-bootstrap/manifests/cco-namespace.yaml <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: openshift-cloud-credential-operator}
EOF
    out /assets/cco-bootstrap/bootstrap-manifests/cloud-credential-operator-pod.yaml <<EOF
apiVersion: v1
kind: Pod
metadata: {name: cloud-credential-operator, namespace: openshift-cloud-credential-operator}
EOF
    ;;
*)
    fail "no contract for $prog"
    ;;
esac
echo "contract $prog: ok"
"#;

/// The renders bootkube runs for a payload with a separate bootstrap, as
/// (image-references name, program path in the image, entrypoint or none).
pub const RENDERS: &[(&str, &str, bool)] = &[
    ("cluster-config-api", "/usr/bin/render", false),
    (
        "cluster-authentication-operator",
        "/usr/bin/authentication-operator",
        false,
    ),
    (
        "cluster-config-operator",
        "/usr/bin/cluster-config-operator",
        false,
    ),
    (
        "cluster-etcd-operator",
        "/usr/bin/cluster-etcd-operator",
        false,
    ),
    (
        "cluster-kube-apiserver-operator",
        "/usr/bin/cluster-kube-apiserver-operator",
        false,
    ),
    (
        "cluster-kube-controller-manager-operator",
        "/usr/bin/cluster-kube-controller-manager-operator",
        false,
    ),
    (
        "cluster-kube-scheduler-operator",
        "/usr/bin/cluster-kube-scheduler-operator",
        false,
    ),
    (
        "cluster-ingress-operator",
        "/usr/bin/ingress-operator",
        true,
    ),
    (
        "cluster-node-tuning-operator",
        "/usr/bin/cluster-node-tuning-operator",
        false,
    ),
    (
        "machine-config-operator",
        "/usr/bin/machine-config-operator",
        true,
    ),
    (
        "cloud-credential-operator",
        "/usr/bin/cloud-credential-operator",
        true,
    ),
];

/// The images bootkube resolves but no render stage runs.
pub const OTHERS: &[&str] = &[
    "etcd",
    "hyperkube",
    "pod",
    "cluster-policy-controller",
    "cluster-bootstrap",
];

/// The static busybox the contract images run (Debian `busybox-static`).
pub const BUSYBOX: &str = "/bin/busybox";

/// Whether the contract images can be built here.
pub fn available() -> bool {
    let ok = Path::new(BUSYBOX).exists();
    if !ok {
        assert!(
            std::env::var_os("OKD_REQUIRE_TOOLS").is_none(),
            "{BUSYBOX} (busybox-static) is missing"
        );
        eprintln!("skipping: {BUSYBOX} (busybox-static) is missing");
    }
    ok
}

/// Builds the contract payload (an OpenShift payload: it names
/// `cluster-kube-apiserver-operator`) into `<scratch>/payload-<version>`.
pub fn build(scratch: &Path, version: &str) -> Payload {
    let layout = scratch.join(format!("payload-{version}"));
    let mut components = Vec::new();
    for name in OTHERS {
        let d = payload::image(
            &layout,
            name,
            "amd64",
            &[(
                &format!("/etc/contract-{name}"),
                name.as_bytes().to_vec(),
                0o644,
            )],
            &[],
            serde_json::json!({}),
        );
        components.push((name.to_string(), d));
    }
    let spec = |n: &str| {
        let d = &components.iter().find(|(c, _)| c == n).unwrap().1;
        format!("{}@{d}", payload::CONTENT_SOURCE)
    };
    let script = CONTRACT_SCRIPT
        .replace("@VERSION@", version)
        .replace("@ETCD@", &spec("etcd"))
        .replace("@HYPERKUBE@", &spec("hyperkube"))
        .replace("@CPC@", &spec("cluster-policy-controller"));
    let busybox = std::fs::read(BUSYBOX).unwrap();
    for (name, program, entrypoint) in RENDERS {
        let ep = [*program];
        let d = payload::image(
            &layout,
            name,
            "amd64",
            &[
                (BUSYBOX, busybox.clone(), 0o755),
                (program, script.clone().into_bytes(), 0o755),
            ],
            if *entrypoint { &ep } else { &[] },
            serde_json::json!({}),
        );
        components.push((name.to_string(), d));
    }
    payload::release(
        &layout,
        version,
        "amd64",
        components,
        &[
            (BUSYBOX, busybox, 0o755),
            (
                "/usr/bin/cluster-version-operator",
                script.into_bytes(),
                0o755,
            ),
        ],
        &["/usr/bin/cluster-version-operator"],
    )
}
