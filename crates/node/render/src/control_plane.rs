//! Stages `kube-apiserver-bootstrap`, `kube-controller-manager-bootstrap`
//! and `kube-scheduler-bootstrap` for an upstream payload: the bootstrap
//! control plane's static pods in `<assets>/bootstrap-manifests/`, with the
//! flags of the operators' bootstrap configs
//! (openshift/cluster-kube-apiserver-operator and
//! openshift/cluster-kube-controller-manager-operator,
//! `bindata/bootkube/config/bootstrap-config-overrides.yaml`: serving
//! certificates chosen by SNI for the service network, localhost, api and
//! api-int; the complete client CA; the aggregator; kubelet client
//! certificates; the service-account keys; kubelet-signer signing node
//! certificates) and the install's certificates from `bootstrap.ign`, as
//! cluster-bootstrap lays them out in `/etc/kubernetes/bootstrap-secrets`.

use crate::{BOOTSTRAP_SECRETS, Input, Networks, RenderError, etcd, host_dir, write_pod};

/// The API server's static pod file, under `<assets>`.
pub const APISERVER_POD: &str = "bootstrap-manifests/kube-apiserver-pod.yaml";
/// The controller manager's static pod file, under `<assets>`.
pub const CONTROLLER_MANAGER_POD: &str = "bootstrap-manifests/kube-controller-manager-pod.yaml";
/// The scheduler's static pod file, under `<assets>`.
pub const SCHEDULER_POD: &str = "bootstrap-manifests/kube-scheduler-pod.yaml";

/// Where a control plane runs: its secrets directory, its etcd and the
/// address it advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The directory of the certificates, keys and loopback kubeconfig, on
    /// the node and inside the pods (the same path).
    pub secrets_dir: String,
    /// kube-apiserver's `--etcd-servers` (`https://host:2379` each).
    pub etcd_servers: Vec<String>,
    /// kube-apiserver's `--advertise-address`.
    pub advertise: std::net::IpAddr,
}

impl Placement {
    /// The bootstrap's: [`BOOTSTRAP_SECRETS`], the bootstrap member on
    /// localhost.
    pub fn bootstrap(node_ip: std::net::IpAddr) -> Placement {
        Placement {
            secrets_dir: BOOTSTRAP_SECRETS.to_string(),
            etcd_servers: vec![format!("https://localhost:{}", etcd::CLIENT_PORT)],
            advertise: node_ip,
        }
    }

    fn secret(&self, name: &str) -> String {
        format!("{}/{name}", self.secrets_dir)
    }

    fn pair(&self, base: &str) -> String {
        format!(
            "{},{}",
            self.secret(&format!("{base}.crt")),
            self.secret(&format!("{base}.key"))
        )
    }

    /// The file names under [`Placement::secrets_dir`] that `args` name
    /// (`<dir>/<file>` anywhere in a flag), sorted and without repeats:
    /// what a node must have for these pods.
    pub fn files_named(&self, args: &[String]) -> Vec<String> {
        let prefix = format!("{}/", self.secrets_dir);
        let mut out: Vec<String> = args
            .iter()
            .flat_map(|a| a.split([',', '=', ':']))
            .filter_map(|p| p.strip_prefix(&prefix))
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// kube-apiserver's flags for the bootstrap control plane.
pub fn apiserver_args(input: &Input, net: &Networks) -> Vec<String> {
    apiserver_args_at(&Placement::bootstrap(input.node_ip), net)
}

/// kube-apiserver's flags for a control plane at `p`.
pub fn apiserver_args_at(p: &Placement, net: &Networks) -> Vec<String> {
    let secret = |n: &str| p.secret(n);
    let pair = |n: &str| p.pair(n);
    vec![
        "kube-apiserver".into(),
        "--secure-port=6443".into(),
        "--bind-address=0.0.0.0".into(),
        format!("--advertise-address={}", p.advertise),
        format!("--etcd-servers={}", p.etcd_servers.join(",")),
        format!("--etcd-cafile={}", secret("etcd-ca-bundle.crt")),
        format!("--etcd-certfile={}", secret("etcd-client.crt")),
        format!("--etcd-keyfile={}", secret("etcd-client.key")),
        format!(
            "--client-ca-file={}",
            secret("kube-apiserver-complete-client-ca-bundle.crt")
        ),
        format!(
            "--tls-cert-file={}",
            secret("kube-apiserver-service-network-server.crt")
        ),
        format!(
            "--tls-private-key-file={}",
            secret("kube-apiserver-service-network-server.key")
        ),
        format!(
            "--tls-sni-cert-key={}:kubernetes,kubernetes.default,kubernetes.default.svc,kubernetes.default.svc.cluster.local",
            pair("kube-apiserver-service-network-server")
        ),
        format!(
            "--tls-sni-cert-key={}:localhost,127.0.0.1,::1",
            pair("kube-apiserver-localhost-server")
        ),
        format!("--tls-sni-cert-key={}", pair("kube-apiserver-lb-server")),
        format!(
            "--tls-sni-cert-key={}",
            pair("kube-apiserver-internal-lb-server")
        ),
        format!(
            "--kubelet-certificate-authority={}",
            secret("kubelet-client-ca-bundle.crt")
        ),
        format!(
            "--kubelet-client-certificate={}",
            secret("kube-apiserver-to-kubelet-client.crt")
        ),
        format!(
            "--kubelet-client-key={}",
            secret("kube-apiserver-to-kubelet-client.key")
        ),
        format!("--proxy-client-cert-file={}", secret("apiserver-proxy.crt")),
        format!("--proxy-client-key-file={}", secret("apiserver-proxy.key")),
        format!(
            "--requestheader-client-ca-file={}",
            secret("aggregator-signer.crt")
        ),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        format!(
            "--service-account-key-file={}",
            secret("service-account.pub")
        ),
        format!(
            "--service-account-signing-key-file={}",
            secret("service-account.key")
        ),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        format!("--service-cluster-ip-range={}", net.service),
        "--authorization-mode=Node,RBAC".into(),
        "--enable-admission-plugins=NodeRestriction".into(),
        "--profiling=false".into(),
    ]
}

/// kube-controller-manager's flags: the loopback kubeconfig, kubelet-signer
/// signing node certificates, no node CIDR allocation (the network plugin
/// owns pod addresses).
pub fn controller_manager_args(net: &Networks) -> Vec<String> {
    controller_manager_args_at(&Placement::bootstrap([127, 0, 0, 1].into()), net)
}

/// kube-controller-manager's flags for a control plane at `p`.
pub fn controller_manager_args_at(p: &Placement, net: &Networks) -> Vec<String> {
    let secret = |n: &str| p.secret(n);
    let kc = secret("kubeconfig");
    vec![
        "kube-controller-manager".into(),
        format!("--kubeconfig={kc}"),
        format!("--authentication-kubeconfig={kc}"),
        format!("--authorization-kubeconfig={kc}"),
        "--secure-port=10257".into(),
        format!(
            "--root-ca-file={}",
            secret("kube-apiserver-complete-server-ca-bundle.crt")
        ),
        format!(
            "--service-account-private-key-file={}",
            secret("service-account.key")
        ),
        format!(
            "--cluster-signing-cert-file={}",
            secret("kubelet-signer.crt")
        ),
        format!(
            "--cluster-signing-key-file={}",
            secret("kubelet-signer.key")
        ),
        format!("--cluster-cidr={}", net.cluster),
        format!("--service-cluster-ip-range={}", net.service),
        "--leader-elect=true".into(),
        "--use-service-account-credentials=true".into(),
        "--controllers=*,-nodeipam".into(),
    ]
}

/// kube-scheduler's flags: the loopback kubeconfig.
pub fn scheduler_args() -> Vec<String> {
    scheduler_args_at(&Placement::bootstrap([127, 0, 0, 1].into()))
}

/// kube-scheduler's flags for a control plane at `p`.
pub fn scheduler_args_at(p: &Placement) -> Vec<String> {
    let kc = p.secret("kubeconfig");
    vec![
        "kube-scheduler".into(),
        format!("--kubeconfig={kc}"),
        format!("--authentication-kubeconfig={kc}"),
        format!("--authorization-kubeconfig={kc}"),
        "--secure-port=10259".into(),
        "--leader-elect=true".into(),
    ]
}

fn pod(name: &str, namespace: &str, image: &str, command: Vec<String>) -> serde_json::Value {
    pod_at(name, namespace, image, command, BOOTSTRAP_SECRETS)
}

fn pod_at(
    name: &str,
    namespace: &str,
    image: &str,
    command: Vec<String>,
    secrets_dir: &str,
) -> serde_json::Value {
    let (vol, mount) = host_dir("secrets", secrets_dir, true);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "namespace": namespace },
        "spec": {
            "hostNetwork": true,
            "containers": [{
                "name": name.trim_start_matches("bootstrap-"),
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": command,
                "volumeMounts": [mount],
            }],
            "volumes": [vol],
        },
    })
}

/// Stage `kube-apiserver-bootstrap`: writes
/// `<assets>/bootstrap-manifests/kube-apiserver-pod.yaml`.
///
/// # Errors
/// [`RenderError::Read`] / [`RenderError::Manifest`] when the Network
/// manifest is missing or incomplete; [`RenderError::Fs`] when the pod cannot
/// be written.
pub fn render_apiserver(input: &Input) -> Result<(), RenderError> {
    let net = Networks::read(&input.assets)?;
    write_pod(
        &input.assets.join(APISERVER_POD),
        &pod(
            "bootstrap-kube-apiserver",
            "kube-system",
            &input.hyperkube_image,
            apiserver_args(input, &net),
        ),
    )
}

/// Stage `kube-controller-manager-bootstrap`: writes
/// `<assets>/bootstrap-manifests/kube-controller-manager-pod.yaml`.
///
/// # Errors
/// As [`render_apiserver`].
pub fn render_controller_manager(input: &Input) -> Result<(), RenderError> {
    let net = Networks::read(&input.assets)?;
    write_pod(
        &input.assets.join(CONTROLLER_MANAGER_POD),
        &pod(
            "bootstrap-kube-controller-manager",
            "kube-system",
            &input.hyperkube_image,
            controller_manager_args(&net),
        ),
    )
}

/// Stage `kube-scheduler-bootstrap`: writes
/// `<assets>/bootstrap-manifests/kube-scheduler-pod.yaml`.
///
/// # Errors
/// [`RenderError::Fs`] when the pod cannot be written.
pub fn render_scheduler(input: &Input) -> Result<(), RenderError> {
    write_pod(
        &input.assets.join(SCHEDULER_POD),
        &pod(
            "bootstrap-kube-scheduler",
            "kube-system",
            &input.hyperkube_image,
            scheduler_args(),
        ),
    )
}

/// Writes the three static pods into `<assets>/bootstrap-manifests/`
/// ([`render_apiserver`], [`render_controller_manager`],
/// [`render_scheduler`]).
///
/// # Errors
/// As each of them.
pub fn render(input: &Input) -> Result<(), RenderError> {
    render_apiserver(input)?;
    render_controller_manager(input)?;
    render_scheduler(input)
}

/// Where a master's control plane keeps its secrets (the same files as
/// the bootstrap's `bootstrap-secrets`; the operators' installer pods put
/// theirs under `static-pod-resources/` too).
pub const MASTER_SECRETS: &str = "/etc/kubernetes/static-pod-resources/okd-control-plane";

/// A master's production control plane: the static pods
/// `kube-system/kube-apiserver`, `kube-controller-manager` and
/// `kube-scheduler` (mirrored as `<name>-<node>`, the names
/// cluster-bootstrap's required pods and HA checks look for), for the
/// files under `p.secrets_dir`. Returns `(file name under
/// /etc/kubernetes/manifests, pod)` and the secret files the pods name.
pub fn master_pods(
    hyperkube_image: &str,
    p: &Placement,
    net: &Networks,
) -> (Vec<(String, serde_json::Value)>, Vec<String>) {
    let api = apiserver_args_at(p, net);
    let kcm = controller_manager_args_at(p, net);
    let sched = scheduler_args_at(p);
    let mut all = api.clone();
    all.extend(kcm.iter().cloned());
    all.extend(sched.iter().cloned());
    let files = p.files_named(&all);
    let d = &p.secrets_dir;
    (
        vec![
            (
                "kube-apiserver-pod.yaml".into(),
                pod_at("kube-apiserver", "kube-system", hyperkube_image, api, d),
            ),
            (
                "kube-controller-manager-pod.yaml".into(),
                pod_at(
                    "kube-controller-manager",
                    "kube-system",
                    hyperkube_image,
                    kcm,
                    d,
                ),
            ),
            (
                "kube-scheduler-pod.yaml".into(),
                pod_at("kube-scheduler", "kube-system", hyperkube_image, sched, d),
            ),
        ],
        files,
    )
}
