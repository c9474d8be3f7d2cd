//! The service's OpenAPI 3.0 document, served at
//! `/api/assisted-install/v2/openapi.json`: every operation of [`OPERATIONS`]
//! (paths and operation ids as assisted-service's `swagger.yaml` names
//! them), its parameters, body, answers and authentication, and the
//! documents' schemas generated from `okd_assisted_api` (their doc
//! comments become the descriptions). `tests/openapi.rs` checks that every
//! operation listed answers on its route.

use okd_assisted_api::Inventory;
use okd_assisted_api::rest::{
    ApiError, Cluster, ClusterCreateParams, ClusterUpdateParams, Event, Host, HostCreateParams,
    HostRegistrationResponse, HostUpdateParams, InfraEnv, InfraEnvCreateParams, InfraError,
    StepReply, Steps,
};
use serde_json::{Map, Value, json};

/// Who may call an operation (assisted-service's security schemes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `userAuth`: `Authorization: Bearer <token>`.
    User,
    /// `agentAuth`: `X-Secret-Key: <agent token>` (the user token too).
    Agent,
    /// No authentication.
    None,
}

/// One operation of the API.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// `get`, `post`, `patch`, `put`, `delete`.
    pub method: &'static str,
    /// Below `/api/assisted-install/v2`, with `{parameters}`.
    pub path: &'static str,
    /// assisted-service's operation id.
    pub operation_id: &'static str,
    /// In words.
    pub summary: &'static str,
    /// Who may call it.
    pub auth: Auth,
    /// Query parameters: (name, required, description).
    pub query: &'static [(&'static str, bool, &'static str)],
    /// The request body's schema name, if any ([`UPLOAD_BODY`]: a file
    /// upload).
    pub body: Option<&'static str>,
    /// The success status and its schema name (`None`: no body, or a file).
    pub ok: (u16, Option<&'static str>),
}

const fn op(
    method: &'static str,
    path: &'static str,
    operation_id: &'static str,
    summary: &'static str,
    auth: Auth,
    body: Option<&'static str>,
    ok: (u16, Option<&'static str>),
) -> Operation {
    Operation {
        method,
        path,
        operation_id,
        summary,
        auth,
        query: &[],
        body,
        ok,
    }
}

/// Every operation the service serves.
pub const OPERATIONS: &[Operation] = &[
    op(
        "get",
        "/clusters",
        "v2ListClusters",
        "The clusters.",
        Auth::User,
        None,
        (200, Some("ClusterList")),
    ),
    op(
        "post",
        "/clusters",
        "v2RegisterCluster",
        "Creates a cluster (status insufficient).",
        Auth::User,
        Some("ClusterCreateParams"),
        (201, Some("Cluster")),
    ),
    op(
        "get",
        "/clusters/{cluster_id}",
        "v2GetCluster",
        "One cluster with its hosts.",
        Auth::User,
        None,
        (200, Some("Cluster")),
    ),
    op(
        "patch",
        "/clusters/{cluster_id}",
        "V2UpdateCluster",
        "Changes a cluster's settings while it is insufficient, ready or pending-for-input.",
        Auth::User,
        Some("ClusterUpdateParams"),
        (201, Some("Cluster")),
    ),
    op(
        "delete",
        "/clusters/{cluster_id}",
        "v2DeregisterCluster",
        "Deletes a cluster; its hosts stay, unbound.",
        Auth::User,
        None,
        (204, None),
    ),
    op(
        "post",
        "/clusters/{cluster_id}/actions/install",
        "v2InstallCluster",
        "Starts the installation of a ready cluster (409 with the reason otherwise).",
        Auth::User,
        None,
        (202, Some("Cluster")),
    ),
    op(
        "post",
        "/clusters/{cluster_id}/actions/cancel",
        "v2CancelInstallation",
        "Cancels an installing, pending, finalizing or failed installation (preparing: back to ready).",
        Auth::User,
        None,
        (202, Some("Cluster")),
    ),
    op(
        "post",
        "/clusters/{cluster_id}/actions/reset",
        "v2ResetCluster",
        "Resets a cluster past the start of its installation to insufficient; its hosts register again.",
        Auth::User,
        None,
        (202, Some("Cluster")),
    ),
    op(
        "post",
        "/clusters/{cluster_id}/actions/complete-installation",
        "V2CompleteInstallation",
        "How a finalizing cluster's installation ended: installed, or error with the reason (409 in any other status).",
        Auth::User,
        Some("CompletionParams"),
        (202, Some("Cluster")),
    ),
    Operation {
        query: &[(
            "file_name",
            true,
            "bootstrap.ign, master.ign, worker.ign, metadata.json or install-config.yaml",
        )],
        ..op(
            "get",
            "/clusters/{cluster_id}/downloads/files",
            "V2DownloadClusterFiles",
            "A file the installation generated.",
            Auth::User,
            None,
            (200, None),
        )
    },
    Operation {
        query: &[
            ("logs_type", true, "host"),
            ("infra_env_id", true, "the host's infra-env"),
            ("host_id", true, "the host"),
        ],
        ..op(
            "post",
            "/clusters/{cluster_id}/logs",
            "V2UploadLogs",
            "A host's logs archive, uploaded by its agent's logs-gather step (at most 64 MiB).",
            Auth::Agent,
            Some(UPLOAD_BODY),
            (204, None),
        )
    },
    Operation {
        query: &[
            ("logs_type", true, "host"),
            (
                "host_id",
                false,
                "one host's archive; without it, a tar of every host's",
            ),
        ],
        ..op(
            "get",
            "/clusters/{cluster_id}/logs",
            "V2DownloadClusterLogs",
            "The hosts' uploaded logs.",
            Auth::User,
            None,
            (200, None),
        )
    },
    Operation {
        query: &[
            (
                "network",
                true,
                "an IPv4 network in CIDR form that the hosts scanned",
            ),
            ("prefix", false, "only addresses starting with this text"),
            (
                "limit",
                false,
                "at most this many addresses, 1 to 8000 (8000)",
            ),
        ],
        ..op(
            "get",
            "/clusters/{cluster_id}/free_addresses",
            "V2GetFreeAddresses",
            "The addresses of a network that every host which scanned it found free.",
            Auth::User,
            None,
            (200, Some("FreeAddressesList")),
        )
    },
    Operation {
        query: &[(
            "file_name",
            true,
            "kubeadmin-password, kubeconfig or kubeconfig-noingress",
        )],
        ..op(
            "get",
            "/clusters/{cluster_id}/downloads/credentials",
            "V2DownloadClusterCredentials",
            "The cluster's credentials.",
            Auth::User,
            None,
            (200, None),
        )
    },
    op(
        "get",
        "/infra-envs",
        "ListInfraEnvs",
        "The infra-envs.",
        Auth::User,
        None,
        (200, Some("InfraEnvList")),
    ),
    op(
        "post",
        "/infra-envs",
        "RegisterInfraEnv",
        "Creates an infra-env, bound to a cluster when cluster_id is given.",
        Auth::User,
        Some("InfraEnvCreateParams"),
        (201, Some("InfraEnv")),
    ),
    op(
        "get",
        "/infra-envs/{infra_env_id}",
        "GetInfraEnv",
        "One infra-env.",
        Auth::User,
        None,
        (200, Some("InfraEnv")),
    ),
    op(
        "delete",
        "/infra-envs/{infra_env_id}",
        "DeregisterInfraEnv",
        "Deletes an infra-env and its hosts.",
        Auth::User,
        None,
        (204, None),
    ),
    Operation {
        query: &[("file_name", true, "discovery.ign")],
        ..op(
            "get",
            "/infra-envs/{infra_env_id}/downloads/files",
            "V2DownloadInfraEnvFiles",
            "The discovery Ignition (agent.service with the infra-env's agent token).",
            Auth::User,
            None,
            (200, None),
        )
    },
    op(
        "post",
        "/infra-envs/{infra_env_id}/regenerate-signing-key",
        "RegenerateInfraEnvSigningKey",
        "Revokes the infra-env's agent tokens.",
        Auth::User,
        None,
        (204, None),
    ),
    op(
        "get",
        "/infra-envs/{infra_env_id}/hosts",
        "v2ListHosts",
        "The infra-env's hosts.",
        Auth::User,
        None,
        (200, Some("HostList")),
    ),
    op(
        "post",
        "/infra-envs/{infra_env_id}/hosts",
        "v2RegisterHost",
        "An agent registers its host.",
        Auth::Agent,
        Some("HostCreateParams"),
        (201, Some("HostRegistrationResponse")),
    ),
    op(
        "get",
        "/infra-envs/{infra_env_id}/hosts/{host_id}",
        "v2GetHost",
        "One host.",
        Auth::User,
        None,
        (200, Some("Host")),
    ),
    op(
        "patch",
        "/infra-envs/{infra_env_id}/hosts/{host_id}",
        "v2UpdateHost",
        "Sets a host's name, role or installation disk.",
        Auth::User,
        Some("HostUpdateParams"),
        (201, Some("Host")),
    ),
    op(
        "delete",
        "/infra-envs/{infra_env_id}/hosts/{host_id}",
        "v2DeregisterHost",
        "Deletes a host.",
        Auth::User,
        None,
        (204, None),
    ),
    Operation {
        query: &[("timestamp", false, "The host's clock, Unix seconds")],
        ..op(
            "get",
            "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
            "v2GetNextSteps",
            "The steps the host runs now.",
            Auth::Agent,
            None,
            (200, Some("Steps")),
        )
    },
    op(
        "post",
        "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
        "v2PostStepReply",
        "A step's result.",
        Auth::Agent,
        Some("StepReply"),
        (204, None),
    ),
    op(
        "put",
        "/infra-envs/{infra_env_id}/hosts/{host_id}/progress",
        "v2UpdateHostInstallProgress",
        "The installer's stage.",
        Auth::Agent,
        Some("HostProgress"),
        (200, None),
    ),
    op(
        "get",
        "/infra-env/{infra_env_id}/hosts/{host_id}/downloads/ignition",
        "v2DownloadHostIgnition",
        "The host's pointer Ignition config.",
        Auth::Agent,
        None,
        (200, None),
    ),
    Operation {
        query: &[
            ("cluster_id", false, "Only this cluster's"),
            ("host_id", false, "Only this host's"),
            ("infra_env_id", false, "Only this infra-env's"),
            ("limit", false, "At most this many"),
            ("offset", false, "Skip this many"),
        ],
        ..op(
            "get",
            "/events",
            "v2ListEvents",
            "Events, oldest first.",
            Auth::User,
            None,
            (200, Some("EventList")),
        )
    },
    op(
        "get",
        "/openapi.json",
        "getOpenAPI",
        "This document.",
        Auth::None,
        None,
        (200, None),
    ),
];

fn schemas() -> Map<String, Value> {
    let mut g = schemars::generate::SchemaSettings::openapi3().into_generator();
    macro_rules! add {
        ($($t:ty),*) => { $( let _ = g.subschema_for::<$t>(); )* };
    }
    add!(
        Cluster,
        ClusterCreateParams,
        ClusterUpdateParams,
        InfraEnv,
        InfraEnvCreateParams,
        Host,
        HostCreateParams,
        HostUpdateParams,
        HostRegistrationResponse,
        Steps,
        StepReply,
        Event,
        ApiError,
        InfraError,
        Inventory,
        okd_assisted_api::rest::HostProgress,
        okd_assisted_api::rest::CompletionParams
    );
    let mut defs: Map<String, Value> = g.take_definitions(true).into_iter().collect();
    for (list, item) in [
        ("ClusterList", "Cluster"),
        ("InfraEnvList", "InfraEnv"),
        ("HostList", "Host"),
        ("EventList", "Event"),
    ] {
        defs.insert(
            list.into(),
            json!({"type": "array", "items": {"$ref": format!("#/components/schemas/{item}")}}),
        );
    }
    defs.insert(
        "FreeAddressesList".into(),
        json!({"type": "array", "items": {"type": "string", "format": "ipv4"}}),
    );
    defs
}

/// [`Operation::body`] of an upload: a `multipart/form-data` body whose
/// field `upfile` is the file (swagger `V2UploadLogs`).
pub const UPLOAD_BODY: &str = "multipart:upfile";

/// The document (OpenAPI 3.0.3).
pub fn document() -> Value {
    let mut paths = Map::new();
    for o in OPERATIONS {
        let mut params: Vec<Value> = o
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        params.extend(o.query.iter().map(|(name, required, d)| {
            json!({"name": name, "in": "query", "required": required, "description": d, "schema": {"type": "string"}})
        }));
        let mut responses = Map::new();
        let ok = match o.ok.1 {
            Some(schema) => {
                json!({"description": "success", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}})
            }
            None if o.ok.0 == 200 => {
                json!({"description": "success", "content": {"application/octet-stream": {"schema": {"type": "string"}}}})
            }
            None => json!({"description": "success"}),
        };
        responses.insert(o.ok.0.to_string(), ok);
        let err = |d: &str| json!({"description": d, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiError"}}}});
        responses.insert(
            "400".into(),
            err("a body or parameter the service refuses, with the reason"),
        );
        responses.insert("404".into(), err("no such resource"));
        responses.insert(
            "409".into(),
            err("not possible in the resource's status, with the reason"),
        );
        responses.insert("503".into(), err("the service's database is unavailable"));
        let mut opv = json!({
            "operationId": o.operation_id,
            "summary": o.summary,
            "parameters": params,
            "responses": responses,
        });
        match o.auth {
            Auth::User => {
                opv["security"] = json!([{"userAuth": []}]);
                responses_auth(&mut opv);
            }
            Auth::Agent => {
                opv["security"] = json!([{"agentAuth": []}, {"userAuth": []}]);
                responses_auth(&mut opv);
            }
            Auth::None => {}
        }
        match o.body {
            Some(UPLOAD_BODY) => {
                opv["requestBody"] = json!({"required": true, "content": {"multipart/form-data": {"schema": {
                    "type": "object", "required": ["upfile"],
                    "properties": {"upfile": {"type": "string", "format": "binary", "description": "the logs archive (gzip-compressed tar)"}}
                }}}});
            }
            Some(b) => {
                opv["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{b}")}}}});
            }
            None => {}
        }
        paths
            .entry(o.path.to_string())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("an object")
            .insert(o.method.to_string(), opv);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "okd-install assisted service",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The assisted installer's REST API v2 (openshift/assisted-service swagger.yaml), as far as this service implements it.",
        },
        "servers": [{"url": okd_assisted_api::rest::BASE_PATH}],
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "userAuth": {"type": "http", "scheme": "bearer", "description": "The service's admin token (<dir>/assisted-service/admin-token, or its --auth-token)"},
                "agentAuth": {"type": "apiKey", "in": "header", "name": "X-Secret-Key", "description": "An agent token (ES256 JWT): the infra-env's discovery token (PULL_SECRET_TOKEN of its discovery Ignition) to register a host, then the host_token the registration returned for that host's calls"},
            },
        },
    })
}

fn responses_auth(op: &mut Value) {
    let e = json!({"description": "not authenticated or not allowed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InfraError"}}}});
    op["responses"]["401"] = e.clone();
    op["responses"]["403"] = e;
}
