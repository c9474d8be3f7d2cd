//! The events listing (`GET /v2/events`); the events themselves are
//! recorded by [`crate::events`].

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::{Failure, Res, json};
use crate::Shared;
use crate::db::EventFilter;
use crate::model;

pub(super) async fn list_events(
    State(s): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Res<Response> {
    let num = |k: &str| -> Res<Option<i64>> {
        q.get(k)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| Failure::bad(format!("{k} {v:?}: not a number")))
            })
            .transpose()
    };
    let f = EventFilter {
        cluster_id: q.get("cluster_id").cloned(),
        host_id: q.get("host_id").cloned(),
        infra_env_id: q.get("infra_env_id").cloned(),
        limit: num("limit")?,
        offset: num("offset")?,
    };
    let v: Vec<_> =
        s.db.events(&f)
            .await?
            .iter()
            .map(model::event_doc)
            .collect();
    Ok(json(StatusCode::OK, &v))
}
