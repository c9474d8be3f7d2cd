//! A response body that counts the octets handed to the connection and
//! reports them once, when the body ended or was dropped (the client went
//! away), for [`crate::HttpObserver`].

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};

/// Called once with (octets sent, whether the whole body went out).
pub(crate) type Report = Box<dyn FnOnce(u64, bool) + Send>;

/// `inner`, counted. Size hint and end of stream are the inner body's, so
/// the server frames the response exactly as without the wrapper.
pub(crate) struct Counted {
    inner: Body,
    size: Option<u64>,
    sent: u64,
    failed: bool,
    report: Option<Report>,
}

impl Counted {
    /// Counts `inner`, whose announced length is `size` (`None`: unknown).
    pub(crate) fn new(inner: Body, size: Option<u64>, report: Report) -> Counted {
        Counted {
            inner,
            size,
            sent: 0,
            failed: false,
            report: Some(report),
        }
    }

    fn finish(&mut self, ended: bool) {
        if let Some(r) = self.report.take() {
            let whole = match self.size {
                Some(n) => self.sent == n,
                None => ended,
            };
            r(self.sent, whole && !self.failed);
        }
    }
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    self.sent += d.len() as u64;
                }
            }
            Poll::Ready(Some(Err(_))) => self.failed = true,
            Poll::Ready(None) => self.finish(true),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.finish(false);
    }
}
