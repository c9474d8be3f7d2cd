//! Blob uploads (distribution spec `spec.md`, "Pushing blobs"): a
//! cross-repository mount, or a monolithic `PUT`, or `PATCH` chunks closed
//! by a `PUT`; every byte hashed on the way so bad content never completes
//! an upload.

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use reqwest::{Method, StatusCode, Url, header};
use tokio::sync::mpsc;

use super::body::idle;
use super::{BlobOutcome, OciError, Registries, Session};
use crate::oci::{Digest, Hasher, Repo};

/// The content being uploaded: the source stream cut into segments, with
/// the running hash and count.
struct Content<S> {
    stream: S,
    hasher: Hasher,
    digest: Digest,
    size: u64,
    /// Bytes taken so far.
    taken: u64,
    /// Bytes read but not yet taken (a piece cut at a segment's end).
    carry: Option<Bytes>,
    done: bool,
    what: String,
}

impl<S: Stream<Item = Result<Bytes, OciError>> + Unpin> Content<S> {
    /// The next piece, at most `room` bytes; `None` at the end of the source.
    async fn next(&mut self, room: u64) -> Result<Option<Bytes>, OciError> {
        let piece = match self.carry.take() {
            Some(p) => p,
            None if self.done => return Ok(None),
            None => match self.stream.next().await {
                Some(p) => p?,
                None => {
                    self.done = true;
                    return Ok(None);
                }
            },
        };
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        let piece = if piece.len() > room {
            self.carry = Some(piece.slice(room..));
            piece.slice(..room)
        } else {
            piece
        };
        self.hasher.update(&piece);
        self.taken = self.taken.saturating_add(piece.len() as u64);
        Ok(Some(piece))
    }

    /// After the last segment: no byte more than `size`, and the digest matches.
    async fn verify_end(&mut self) -> Result<(), OciError> {
        if self.taken < self.size {
            return Err(OciError::Size {
                what: self.what.clone(),
                expected: self.size,
                actual: self.taken,
            });
        }
        if let Some(extra) = self.next(u64::MAX).await?
            && !extra.is_empty()
        {
            return Err(OciError::Size {
                what: self.what.clone(),
                expected: self.size,
                actual: self.taken,
            });
        }
        let actual = std::mem::take(&mut self.hasher).finish();
        if actual != self.digest {
            return Err(OciError::Digest {
                what: self.what.clone(),
                expected: self.digest.clone(),
                actual,
                size: self.size,
            });
        }
        Ok(())
    }
}

/// One request of an upload: where, how, and which bytes.
struct Segment<'a> {
    url: Url,
    method: Method,
    /// Offset of the first byte.
    start: u64,
    len: u64,
    /// Whether the upload's last byte is in this segment.
    last: bool,
    auth: &'a Option<String>,
}

impl Registries {
    /// The `Authorization` value `auth` for a request to `url` (an upload
    /// `Location` the registry named): kept only when `url` has the
    /// registry's own scheme, host and port, or its host is a token realm
    /// the user allowed ([`super::ClientOptions::allow_token_realms`]);
    /// anywhere else the request goes without credentials, so a registry
    /// cannot send the login to another server by its `Location` header.
    fn auth_for(&self, s: &Session, url: &Url, auth: Option<String>) -> Option<String> {
        if super::same_origin(url, &s.base) || self.realm_allowed(url) {
            auth
        } else {
            if auth.is_some() {
                tracing::debug!(
                    "registry {}: upload location on {}, sent without the login",
                    s.registry,
                    url.host_str().unwrap_or_default()
                );
            }
            None
        }
    }

    fn location(s: &Session, resp: &reqwest::Response, what: &str) -> Result<Url, OciError> {
        let loc = resp
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| OciError::Format {
                what: what.to_string(),
                detail: format!("HTTP {} without a Location header", resp.status().as_u16()),
            })?;
        s.base.join(loc).map_err(|e| OciError::Format {
            what: what.to_string(),
            detail: format!("bad Location \"{}\": {e}", s.excerpt(loc)),
        })
    }

    /// Puts blob `digest` (`size` bytes), which the caller found missing
    /// (`HEAD`, [`Registries::has_blob`]), into `repo`: a cross-repository
    /// mount from `mount_from` (same registry) when given and accepted;
    /// otherwise an upload of `source` (opened only then), monolithic or in `PATCH` chunks of
    /// [`super::ClientOptions::chunk_size`]. Every byte is hashed on the way: when
    /// the content does not match `digest` (or `size`) the upload is aborted
    /// before it completes, so the target never holds the blob, and the
    /// error is [`OciError::Digest`] / [`OciError::Size`].
    pub async fn upload_blob<S, F, Fut>(
        &self,
        repo: &Repo,
        digest: &Digest,
        size: u64,
        mount_from: Option<&Repo>,
        source: F,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<BlobOutcome, OciError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, OciError>>,
        S: Stream<Item = Result<Bytes, OciError>> + Unpin,
    {
        let s = self.session(repo).await?;
        let what = format!("blob {digest} to {repo}");
        let mount_from = mount_from.filter(|m| m.registry == repo.registry && m.name != repo.name);
        let mut url = Self::url(&s, repo, "blobs/uploads/");
        if let Some(m) = mount_from {
            url.query_pairs_mut()
                .append_pair("mount", digest.as_str())
                .append_pair("from", &m.name);
        }
        let scopes = Self::scopes(repo, true, mount_from);
        let resp = self
            .send(
                &s,
                &scopes,
                Method::POST,
                url,
                &[(header::CONTENT_LENGTH, "0".into())],
                None,
            )
            .await?;
        match resp.status() {
            StatusCode::CREATED if mount_from.is_some() => return Ok(BlobOutcome::Mounted),
            StatusCode::ACCEPTED => {}
            _ => {
                return Err(self.fail(&s, format!("POST upload of {what}"), resp).await);
            }
        }
        let location = Self::location(&s, &resp, &what)?;
        let auth = self.authorization(&s, &scopes, false).await?;
        let auth = self.auth_for(&s, &location, auth);
        let content = Content {
            stream: source().await?,
            hasher: Hasher::new(),
            digest: digest.clone(),
            size,
            taken: 0,
            carry: None,
            done: false,
            what: what.clone(),
        };
        self.upload_content(&s, location, auth, content, progress)
            .await
    }

    /// The upload after `POST`: segments until every byte is sent, then the
    /// closing `PUT` of a chunked upload. Bad content cancels the session.
    async fn upload_content<S>(
        &self,
        s: &Session,
        mut location: Url,
        auth: Option<String>,
        mut content: Content<S>,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<BlobOutcome, OciError>
    where
        S: Stream<Item = Result<Bytes, OciError>> + Unpin,
    {
        let mut auth = auth;
        let (size, what) = (content.size, content.what.clone());
        let chunk = if self.opts.chunk_size == 0 || size <= self.opts.chunk_size {
            size.max(1)
        } else {
            self.opts.chunk_size
        };
        let monolithic = chunk >= size;
        loop {
            let start = content.taken;
            let len = chunk.min(size - start);
            let mut url = location.clone();
            if monolithic {
                url.query_pairs_mut()
                    .append_pair("digest", content.digest.as_str());
            }
            let seg = Segment {
                url,
                method: if monolithic {
                    Method::PUT
                } else {
                    Method::PATCH
                },
                start,
                len,
                last: start.saturating_add(len) >= size,
                auth: &auth,
            };
            let resp = match self.send_segment(s, &seg, &mut content, progress).await {
                Ok(r) => r,
                Err(e) => {
                    let _ = self.cancel(&location, &auth).await;
                    return Err(e);
                }
            };
            if monolithic {
                if resp.status() != StatusCode::CREATED {
                    return Err(self.fail(s, format!("PUT {what}"), resp).await);
                }
                return Ok(BlobOutcome::Uploaded(size));
            }
            if resp.status() != StatusCode::ACCEPTED {
                let sent = content.taken;
                return Err(self
                    .fail(s, format!("PATCH {what} ({sent}/{size} bytes)"), resp)
                    .await);
            }
            location = Self::location(s, &resp, &what)?;
            let next_auth = self.auth_for(s, &location, auth.clone());
            if seg.last {
                return self
                    .close_upload(s, &location, &next_auth, &content.digest, &what, size)
                    .await;
            }
            auth = next_auth;
        }
    }

    /// One `PUT` or `PATCH` carrying `seg.len` bytes of `content`, streamed
    /// through a channel while they are hashed; for the last segment the
    /// content is verified before the request may complete (on a mismatch
    /// the body breaks off and the request is dropped).
    async fn send_segment<S>(
        &self,
        s: &Session,
        seg: &Segment<'_>,
        content: &mut Content<S>,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<reqwest::Response, OciError>
    where
        S: Stream<Item = Result<Bytes, OciError>> + Unpin,
    {
        let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
        let body =
            reqwest::Body::wrap_stream(futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|x| (x, rx))
            }));
        let mut req = self
            .http
            .request(seg.method.clone(), seg.url.clone())
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .header(header::CONTENT_LENGTH, seg.len.to_string())
            .body(body);
        if seg.method == Method::PATCH {
            let end = seg.start.saturating_add(seg.len.max(1)) - 1;
            req = req.header("Content-Range", format!("{}-{end}", seg.start));
        }
        if let Some(a) = seg.auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        let request = tokio::spawn(req.send());
        let abort = |e: OciError| {
            request.abort();
            e
        };
        let timeout = self.opts.read_timeout;
        let what = || {
            format!(
                "{} {}: the registry takes no more bytes",
                seg.method, seg.url
            )
        };
        let mut seg_sent = 0u64;
        while seg_sent < seg.len {
            let Some(piece) = content.next(seg.len - seg_sent).await.map_err(abort)? else {
                break;
            };
            seg_sent = seg_sent.saturating_add(piece.len() as u64);
            progress(piece.len() as u64);
            match idle(timeout, &s.registry, what, tx.send(Ok(piece))).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => break, // the request ended early; its result says why
                Err(e) => return Err(abort(e)),
            }
        }
        if seg.last {
            if let Err(e) = content.verify_end().await {
                let _ = tx
                    .send(Err(std::io::Error::other("content rejected")))
                    .await;
                return Err(abort(e));
            }
        } else if seg_sent < seg.len {
            return Err(abort(OciError::Size {
                what: content.what.clone(),
                expected: content.size,
                actual: content.taken,
            }));
        }
        drop(tx);
        let url = seg.url.clone();
        idle(
            timeout,
            &s.registry,
            || format!("{} {url}", seg.method),
            request,
        )
        .await?
        .map_err(|e| OciError::Transfer {
            what: content.what.clone(),
            detail: e.to_string(),
        })?
        .map_err(|e| Self::unreachable(s, &seg.url, &e))
    }

    /// Closes a chunked upload: `PUT <location>?digest=` with no body.
    async fn close_upload(
        &self,
        s: &Session,
        location: &Url,
        auth: &Option<String>,
        digest: &Digest,
        what: &str,
        size: u64,
    ) -> Result<BlobOutcome, OciError> {
        let mut url = location.clone();
        url.query_pairs_mut().append_pair("digest", digest.as_str());
        let mut req = self
            .http
            .put(url.clone())
            .header(header::CONTENT_LENGTH, "0")
            .header(header::CONTENT_TYPE, "application/octet-stream");
        if let Some(a) = auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        let resp = self.send_once(s, &"PUT", &url, req).await?;
        if resp.status() != StatusCode::CREATED {
            return Err(self.fail(s, format!("PUT (close) {what}"), resp).await);
        }
        Ok(BlobOutcome::Uploaded(size))
    }

    /// Ends an upload session that will not complete (`DELETE <location>`).
    async fn cancel(&self, location: &Url, auth: &Option<String>) -> Result<(), reqwest::Error> {
        let mut req = self.http.delete(location.clone());
        if let Some(a) = auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        match tokio::time::timeout(self.opts.read_timeout, req.send()).await {
            Ok(r) => r.map(|_| ()),
            Err(_) => Ok(()),
        }
    }
}
