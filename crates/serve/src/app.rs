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
use okd_lb::LoadBalancer;
use serde_json::Value;
use tracing::info;

use crate::status::Status;

/// Reports every service's events to the [`Status`].
pub(crate) struct Observer(pub(crate) Arc<Status>);

impl okd_mcs::FetchObserver for Observer {
    fn fetched(&self, peer: SocketAddr, pool: &str, spec: &str, status: u16) {
        self.0.ignition(peer, pool, spec, status);
    }
}

impl okd_bootserver::HttpObserver for Observer {
    fn served(&self, peer: SocketAddr, path: &str, status: u16, bytes: u64) {
        self.0.http(peer, path, status, bytes);
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
}

/// What the status server and the control socket share.
#[derive(Clone)]
pub(crate) struct StatusApp {
    pub(crate) status: Arc<Status>,
    pub(crate) lb: Option<Arc<LoadBalancer>>,
    pub(crate) http: Option<Arc<okd_bootserver::HttpState>>,
}

impl StatusApp {
    fn lb_json(&self) -> Value {
        self.lb
            .as_ref()
            .map(|lb| serde_json::to_value(lb.snapshot()).unwrap_or(Value::Null))
            .unwrap_or(Value::Null)
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
        out
    }
}

pub(crate) fn status_router(app: StatusApp) -> Router {
    Router::new()
        .route(
            "/",
            get(|State(a): State<StatusApp>| async move { Html(a.status.html(a.lb_json())) }),
        )
        .route(
            "/status",
            get(|State(a): State<StatusApp>| async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    serde_json::to_string_pretty(&a.status.json(a.lb_json())).unwrap_or_default(),
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

/// The reply of the control socket to one request line.
pub(crate) fn control_reply(app: &StatusApp, inv: &Inventory, line: &str) -> String {
    match line {
        "status" => {
            serde_json::to_string_pretty(&app.status.json(app.lb_json())).unwrap_or_default() + "\n"
        }
        "remove-bootstrap" => {
            let names: Vec<&str> = inv
                .role(Role::Bootstrap)
                .map(|n| n.hostname.as_str())
                .collect();
            if names.is_empty() {
                return "error: the inventory has no bootstrap host (bastion-config.yaml `bootstrap`)\n".into();
            }
            if app.lb.is_none() && app.http.is_none() {
                return "error: this serve runs neither the load balancer nor HTTP (--services): remove the bootstrap from your own balancer\n".into();
            }
            let mut out = String::new();
            if let Some(http) = &app.http {
                if http.remove_bootstrap() {
                    info!("bootstrap.ign is no longer served (serve remove-bootstrap)");
                    out += "bootstrap.ign is no longer served\n";
                } else {
                    out += "bootstrap.ign was already no longer served\n";
                }
            }
            if let Some(lb) = &app.lb {
                for name in names {
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
            } else {
                out += "this serve runs no load balancer: remove the bootstrap from your own balancer\n";
            }
            out
        }
        other => format!("error: unknown request {other:?} (status, remove-bootstrap)\n"),
    }
}
