//! etcd membership for the handover (issue #21 item 2): list, add as a
//! learner, promote, remove, and each member's health, through etcd's v3
//! JSON gateway on the client port (etcd `Documentation/dev-guide/api_grpc_gateway.md`:
//! `POST /v3/cluster/member/{list,add,promote,remove}`,
//! `POST /v3/maintenance/status`), with the same HTTPS client and etcd
//! client certificate as `wait-for-etcd` (so no gRPC stack and no build-time
//! protoc). Member IDs are uint64 and travel as JSON strings.

use serde::Deserialize;

use crate::handover::Member;

/// One member as the member list gives it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EtcdMember {
    /// The member ID.
    #[serde(rename = "ID", deserialize_with = "u64_string")]
    pub id: u64,
    /// Its name (empty while an added member has not started).
    #[serde(default)]
    pub name: String,
    /// Peer URLs.
    #[serde(rename = "peerURLs", default)]
    pub peer_urls: Vec<String>,
    /// Client URLs (empty while it has not started).
    #[serde(rename = "clientURLs", default)]
    pub client_urls: Vec<String>,
    /// Not promoted yet.
    #[serde(rename = "isLearner", default)]
    pub is_learner: bool,
}

fn u64_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        S(String),
        U(u64),
    }
    match N::deserialize(d)? {
        N::U(n) => Ok(n),
        N::S(s) => s.parse().map_err(serde::de::Error::custom),
    }
}

/// A client for the members of one etcd cluster.
#[derive(Debug, Clone)]
pub struct Members {
    http: reqwest::Client,
    endpoints: Vec<String>,
}

/// An etcd request that failed: the endpoint and etcd's message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("etcd {endpoint}: {message}")]
pub struct EtcdError {
    /// The client URL asked.
    pub endpoint: String,
    /// etcd's error (`etcdserver: …`) or the connection's cause.
    pub message: String,
}

impl Members {
    /// A client asking `endpoints` (client URLs, `https://host:2379`) in
    /// order through `http` (which carries the CA and the client
    /// certificate, see [`crate::checks::client`]).
    pub fn new(http: reqwest::Client, endpoints: Vec<String>) -> Members {
        Members { http, endpoints }
    }

    async fn post_to(
        &self,
        endpoint: &str,
        path: &str,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, EtcdError> {
        let err = |message: String| EtcdError {
            endpoint: endpoint.to_string(),
            message,
        };
        let url = format!("{}{path}", endpoint.trim_end_matches('/'));
        let r = self
            .http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| err(crate::checks::cause(&e)))?;
        let status = r.status();
        let bytes = r.bytes().await.map_err(|e| err(crate::checks::cause(&e)))?;
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| err(format!("{path}: HTTP {status}, not JSON: {e}")))?;
        if let Some(m) = v
            .get("error")
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            && !status.is_success()
        {
            return Err(err(m.to_string()));
        }
        if !status.is_success() {
            return Err(err(format!("{path}: HTTP {status}")));
        }
        Ok(v)
    }

    /// Asks each endpoint in turn until one answers.
    async fn post(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, EtcdError> {
        let mut last = None;
        for e in &self.endpoints {
            match self.post_to(e, path, body.clone()).await {
                Ok(v) => return Ok(v),
                // etcd answered with its own error: no other endpoint
                // would say otherwise.
                Err(err) if err.message.starts_with("etcdserver:") => return Err(err),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or(EtcdError {
            endpoint: String::new(),
            message: "no etcd endpoint to ask".into(),
        }))
    }

    fn members_of(v: &serde_json::Value) -> Result<Vec<EtcdMember>, EtcdError> {
        serde_json::from_value(v.get("members").cloned().unwrap_or_default()).map_err(|e| {
            EtcdError {
                endpoint: String::new(),
                message: format!("a member list that does not parse: {e}"),
            }
        })
    }

    /// The members (`etcdctl member list`).
    ///
    /// # Errors
    /// [`EtcdError`] when no endpoint answers.
    pub async fn list(&self) -> Result<Vec<EtcdMember>, EtcdError> {
        let v = self
            .post("/v3/cluster/member/list", serde_json::json!({}))
            .await?;
        Self::members_of(&v)
    }

    /// Adds a member with `peer_url` as a learner (`etcdctl member add
    /// --learner`); returns its ID and the member list after the add.
    ///
    /// # Errors
    /// [`EtcdError`]: etcd refuses (a peer URL in use, too many learners).
    pub async fn add_learner(&self, peer_url: &str) -> Result<(u64, Vec<EtcdMember>), EtcdError> {
        let v = self
            .post(
                "/v3/cluster/member/add",
                serde_json::json!({"peerURLs": [peer_url], "isLearner": true}),
            )
            .await?;
        let id = v
            .pointer("/member/ID")
            .cloned()
            .and_then(|id| serde_json::from_value::<EtcdMemberId>(id).ok())
            .map(|m| m.0)
            .ok_or_else(|| EtcdError {
                endpoint: String::new(),
                message: "the add's answer names no member ID".into(),
            })?;
        Ok((id, Self::members_of(&v)?))
    }

    /// Promotes learner `id` to a voter; etcd refuses while it is not in
    /// sync with the leader (retry later).
    ///
    /// # Errors
    /// [`EtcdError`] with etcd's reason.
    pub async fn promote(&self, id: u64) -> Result<(), EtcdError> {
        self.post(
            "/v3/cluster/member/promote",
            serde_json::json!({"ID": id.to_string()}),
        )
        .await
        .map(|_| ())
    }

    /// Removes member `id`. etcd refuses ("etcdserver: unhealthy cluster")
    /// while the members left have not been connected long enough to keep
    /// quorum (its strict reconfiguration check): retry later.
    ///
    /// # Errors
    /// [`EtcdError`] with etcd's reason.
    pub async fn remove(&self, id: u64) -> Result<(), EtcdError> {
        self.post(
            "/v3/cluster/member/remove",
            serde_json::json!({"ID": id.to_string()}),
        )
        .await
        .map(|_| ())
    }

    /// Whether `member` answers a status request on its first client URL.
    pub async fn healthy(&self, member: &EtcdMember) -> bool {
        match member.client_urls.first() {
            Some(u) => self
                .post_to(u, "/v3/maintenance/status", serde_json::json!({}))
                .await
                .is_ok(),
            None => false,
        }
    }

    /// The members with their health, as [`crate::handover`] judges them.
    ///
    /// # Errors
    /// [`EtcdError`] when the list cannot be read.
    pub async fn judged(&self) -> Result<Vec<(EtcdMember, Member)>, EtcdError> {
        let mut out = Vec::new();
        for m in self.list().await? {
            let healthy = self.healthy(&m).await;
            let j = Member {
                name: m.name.clone(),
                learner: m.is_learner,
                healthy,
            };
            out.push((m, j));
        }
        Ok(out)
    }
}

#[derive(Deserialize)]
struct EtcdMemberId(#[serde(deserialize_with = "u64_string")] u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_ids_parse_from_strings_and_numbers() {
        let v = serde_json::json!({"members": [
            {"ID": "10276657743932975437", "name": "etcd-bootstrap", "peerURLs": ["https://10.0.0.2:2380"], "clientURLs": ["https://10.0.0.2:2379"]},
            {"ID": 7, "peerURLs": ["https://10.0.0.3:2380"], "isLearner": true},
        ]});
        let ms = Members::members_of(&v).unwrap();
        assert_eq!(ms[0].id, 10276657743932975437);
        assert_eq!(ms[1].id, 7);
        assert!(ms[1].is_learner && ms[1].name.is_empty() && ms[1].client_urls.is_empty());
    }
}
