//! What the status page, `/status`, `/metrics` and the control socket answer,
//! and the observer that feeds the status store from every service.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use okd_hosts::{Inventory, Role};
use okd_lb::{FrontendStats, LoadBalancer, Stats};
use okd_serve_api::Request;
use okd_serve_api::control::error_reply;
use tracing::info;

use crate::status::{Rendering, Status};

/// Reports every service's events to the [`Status`].
pub(crate) struct Observer(pub(crate) Arc<Status>);

impl okd_mcs::FetchObserver for Observer {
    fn fetched(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        self.0.ignition(peer, pool, spec, status);
    }
}

impl okd_bootserver::HttpObserver for Observer {
    fn served(&self, s: okd_bootserver::Served<'_>) {
        self.0
            .http(s.peer, s.path, s.status, s.sent, s.size, s.complete);
    }
}

impl okd_dns::DnsObserver for Observer {
    fn answered(&self, client: SocketAddr, name: &str, qtype: &str, answers: &[String]) {
        self.0.dns(client, name, qtype, answers);
    }
}

impl okd_lb::ConnObserver for Observer {
    fn proxied(&self, _frontend: &str, _backend: &str, client: SocketAddr, local: SocketAddr) {
        self.0.proxied(client, local);
    }

    fn closed(&self, frontend: &str, backend: &str, client: SocketAddr, to_client: u64) {
        // serve's own machine-config server reports its answers itself.
        if frontend == okd_lb::Service::MachineConfig.name() && backend != okd_lb::LOCAL_MCS_BACKEND
        {
            self.0.proxied_config(client, backend, to_client);
        }
    }

    fn held(&self, frontend: &str, client: SocketAddr, kept: &[String]) {
        if frontend == okd_lb::Service::MachineConfig.name() {
            self.0.held(client, kept);
        }
    }
}

/// What the status server and the control socket share.
#[derive(Clone)]
pub(crate) struct StatusApp {
    /// The asset directory (where `remove-bootstrap` is recorded).
    pub(crate) dir: std::path::PathBuf,
    pub(crate) status: Arc<Status>,
    pub(crate) lb: Option<Arc<LoadBalancer>>,
    pub(crate) http: Option<Arc<okd_bootserver::HttpState>>,
}

impl StatusApp {
    /// The document for an HTTP reader ([`Status::rendered`]).
    async fn rendered(&self, what: Rendering) -> std::sync::Arc<str> {
        let lb = self.lb.clone();
        self.status
            .rendered(what, move || lb.map(|lb| lb.snapshot()))
            .await
    }

    /// The load balancer's snapshot, `None` when this serve runs none.
    fn lb_stats(&self) -> Option<Stats> {
        self.lb.as_ref().map(|lb| lb.snapshot())
    }

    fn prometheus(&self) -> String {
        let mut out = self
            .lb
            .as_ref()
            .map(|lb| lb.prometheus())
            .unwrap_or_default();
        out += "# HELP okd_serve_unknown_clients Clients outside the inventory remembered by the status page (bounded).\n";
        out += "# TYPE okd_serve_unknown_clients gauge\n";
        out += &format!(
            "okd_serve_unknown_clients {}\n",
            self.status.unknown_clients()
        );
        out += "# HELP okd_serve_status_bytes Size of the status page's event store, estimated in bytes (bounded).\n";
        out += "# TYPE okd_serve_status_bytes gauge\n";
        out += &format!("okd_serve_status_bytes {}\n", self.status.stored_bytes());
        out
    }
}

pub(crate) fn status_router(app: StatusApp) -> Router {
    Router::new()
        .route(
            "/",
            get(|State(a): State<StatusApp>| async move {
                Html(a.rendered(Rendering::Html).await.to_string())
            }),
        )
        .route(
            "/status",
            get(|State(a): State<StatusApp>| async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    a.rendered(Rendering::Json).await.to_string(),
                )
                    .into_response()
            }),
        )
        .route(
            "/metrics",
            get(|State(a): State<StatusApp>| async move {
                (
                    [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                    a.prometheus(),
                )
                    .into_response()
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(app)
}

/// The reply of the control socket to one request line (see
/// [`okd_serve_api::control`] for the protocol).
pub(crate) fn control_reply(app: &StatusApp, inv: &Inventory, line: &str) -> String {
    match Request::parse(line) {
        Some(Request::Status) => {
            serde_json::to_string_pretty(&app.status.document(app.lb_stats())).unwrap_or_default()
                + "\n"
        }
        Some(Request::RemoveBootstrap) => {
            let names: Vec<&str> = inv
                .role(Role::Bootstrap)
                .map(|n| n.hostname.as_str())
                .collect();
            if names.is_empty() {
                return error_reply(
                    "the inventory has no bootstrap host (bastion-config.yaml `bootstrap`)",
                );
            }
            if app.lb.is_none() && app.http.is_none() {
                return error_reply(
                    "this serve runs neither the load balancer nor HTTP (--services): remove the bootstrap from your own balancer",
                );
            }
            let mut out = match okd_serve_api::removal::record(&app.dir) {
                Ok(_) => format!(
                    "recorded in {}: later serves keep the bootstrap removed until `okd-install serve restore-bootstrap`\n",
                    okd_serve_api::removal::path(&app.dir).display()
                ),
                Err(e) => return error_reply(&e.to_string()),
            };
            if let Some(http) = &app.http {
                if http.remove_bootstrap() {
                    info!("bootstrap.ign is no longer served (serve remove-bootstrap)");
                    out += "bootstrap.ign is no longer served\n";
                } else {
                    out += "bootstrap.ign was already no longer served\n";
                }
            }
            if let Some(lb) = &app.lb {
                // The bootstrap's backends as they were, so the dashboard
                // still shows that its API came up once they are gone.
                let before: Vec<FrontendStats> = lb
                    .snapshot()
                    .frontends
                    .into_iter()
                    .filter_map(|mut fe| {
                        fe.backends.retain(|b| names.contains(&b.name.as_str()));
                        (!fe.backends.is_empty()).then_some(fe)
                    })
                    .collect();
                for name in &names {
                    let left = lb.remove_backend(name);
                    if left.is_empty() {
                        out += &format!("backend {name} was already removed\n");
                    } else {
                        out += &format!(
                            "removed backend {name} from frontends {}\n",
                            left.join(", ")
                        );
                    }
                }
                app.status.bootstrap_removed(before);
            } else {
                out += "this serve runs no load balancer: remove the bootstrap from your own balancer\n";
            }
            out
        }
        None => error_reply(&format!(
            "unknown request {line:?} ({})",
            Request::ALL.map(Request::as_str).join(", ")
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use okd_lb::{Backend, Frontend, HealthCheck};
    use okd_serve_api::StatusDocument;
    use okd_serve_api::status::Stage;
    use serde_json::json;

    fn node(hostname: &str, role: Role, address: &str) -> okd_hosts::Node {
        okd_hosts::Node {
            hostname: hostname.into(),
            fqdn: format!("{hostname}.okd.example"),
            role,
            mac: None,
            interface: None,
            address: address.parse().expect("address"),
            prefix: 8,
            gateway: None,
            nameservers: Vec::new(),
            install_disk: "/dev/sda".into(),
            etcd_name: None,
        }
    }

    /// A bootstrap (127.0.0.2) and a master (127.0.0.3) of `okd.example`.
    pub(crate) fn inventory() -> Inventory {
        Inventory {
            cluster_name: "okd".into(),
            base_domain: "example".into(),
            cluster_domain: "okd.example".into(),
            listen: "127.0.0.1".parse().expect("address"),
            api: "127.0.0.1".parse().expect("address"),
            ingress: "127.0.0.1".parse().expect("address"),
            upstreams: Vec::new(),
            nodes: vec![
                node("bootstrap", Role::Bootstrap, "127.0.0.2"),
                node("master", Role::Master, "127.0.0.3"),
            ],
            ports: serde_json::from_value(json!({})).expect("default ports"),
            os_images: serde_json::from_value(json!({})).expect("default images"),
            extra_records: Default::default(),
            allow_recursion: Vec::new(),
        }
    }

    fn stage<'a>(doc: &'a StatusDocument, name: &str) -> &'a Stage {
        doc.hosts[0]
            .stage(name)
            .unwrap_or_else(|| panic!("no stage {name}: {doc:?}"))
    }

    /// `remove-bootstrap` against a running load balancer: the bootstrap's
    /// stage line gets "Removed from load balancer" with the time, and
    /// keeps "API up on bootstrap" from the backends as they were.
    #[tokio::test]
    async fn remove_bootstrap_is_a_stage() {
        let inv = inventory();
        let be = |n: &str, a: &str| Backend::new(n, a.parse().expect("backend"));
        let fe = |name: &str, port: u16| {
            let mut f = Frontend::new(
                name,
                "127.0.0.1:0".parse().expect("bind"),
                vec![
                    be("bootstrap", &format!("127.0.0.2:{port}")),
                    be("master", &format!("127.0.0.3:{port}")),
                ],
            );
            f.check = HealthCheck::none();
            f
        };
        let lb = LoadBalancer::start(vec![fe("api", 6443), fe("machine-config", 22623)])
            .await
            .expect("load balancer");
        let dir = tempfile::tempdir().expect("asset directory");
        let app = StatusApp {
            dir: dir.path().to_path_buf(),
            status: Arc::new(Status::new(inv.clone())),
            lb: Some(Arc::new(lb)),
            http: None,
        };
        let before = app.status.document(app.lb_stats());
        let r = stage(&before, "Removed from load balancer");
        assert!(!r.done, "{before:?}");
        assert_eq!(r.detail, "still a backend of api, machine-config");
        assert!(stage(&before, "API up on bootstrap").done);
        assert_eq!(before.bootstrap_removed, None);

        let reply = control_reply(&app, &inv, "remove-bootstrap");
        let record = format!(
            "recorded in {}: later serves keep the bootstrap removed until `okd-install serve restore-bootstrap`\n",
            dir.path().join(crate::BOOTSTRAP_REMOVED_FILE).display()
        );
        assert_eq!(
            reply,
            format!("{record}removed backend bootstrap from frontends api, machine-config\n")
        );
        assert!(dir.path().join(crate::BOOTSTRAP_REMOVED_FILE).is_file());
        let after = app.status.document(app.lb_stats());
        let r = stage(&after, "Removed from load balancer");
        assert!(r.done, "{after:?}");
        assert_eq!(r.detail, "by `serve remove-bootstrap`");
        let t = r.time.clone().expect("removal time");
        assert!(
            time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339).is_ok(),
            "{t}"
        );
        assert_eq!(after.bootstrap_removed.as_ref().map(|r| &r.time), Some(&t));
        let api = stage(&after, "API up on bootstrap");
        assert!(api.done, "{after:?}");
        assert_eq!(
            api.detail,
            "no check yet (before its removal from the load balancer)"
        );
        let lb = after.load_balancer.as_ref().expect("load balancer");
        assert!(
            lb.frontends
                .iter()
                .flat_map(|fe| &fe.backends)
                .all(|b| b.addr.ip().to_string() != "127.0.0.2"),
            "{lb:?}"
        );

        // A second request removes nothing and keeps the first time.
        let reply = control_reply(&app, &inv, "remove-bootstrap");
        assert_eq!(
            reply,
            format!("{record}backend bootstrap was already removed\n")
        );
        let again = app.status.document(app.lb_stats());
        assert_eq!(
            stage(&again, "Removed from load balancer").time.as_ref(),
            Some(&t)
        );
    }
}
