//! Reading a JSON document without holding its very large strings.
//!
//! An Ignition config can carry files of tens of MB as data URLs
//! (`storage.files[].contents.source`, Ignition config spec v3; bootstrap.ign
//! carries the okd-install program for the bootstrap node that way). A
//! reader that only needs the rest of the config (its certificates, its
//! units) should not hold those strings, and neither should a JSON parser:
//! `serde_json` buffers a whole string before it hands it over.
//!
//! [`ElideLarge`] is a [`Read`] adapter over JSON text that passes the text
//! through unchanged, except each string literal whose content is longer
//! than a limit and which a [`LargeStrings`] sink accepts: the sink receives
//! that content in pieces (for hashing or copying) and says what short
//! content replaces it. Memory is bounded by the limit plus the read buffer,
//! whatever the size of the document.
//!
//! The adapter only tracks string boundaries (a `"` not escaped by `\`,
//! RFC 8259 §7); it does not check the rest of the syntax: the parser that
//! reads its output does.

use std::io::{self, Read};
use std::path::Path;

/// What to do with the string literals longer than [`ElideLarge`]'s limit.
pub trait LargeStrings {
    /// A string literal longer than the limit starts. `offset` is the byte
    /// offset in the source of its first content byte (just after the
    /// opening quote); `head` is the first `limit + 1` bytes of its content,
    /// as written (escapes not decoded). Return `true` to elide it: `head`
    /// then counts as its first piece, the rest arrives through
    /// [`LargeStrings::piece`]; `false` passes it through unchanged.
    fn begin(&mut self, offset: u64, head: &[u8]) -> bool;
    /// The next bytes of an elided string's content, as written.
    fn piece(&mut self, bytes: &[u8]);
    /// The elided string ended after `len` content bytes (without the
    /// quotes). Returns the content written in its place: valid JSON string
    /// content, without quotes.
    fn end(&mut self, len: u64) -> String;
}

/// Elides every string starting with `data:` and replaces it with the
/// empty data URL `data:,`, keeping nothing: for readers that never look at
/// large files' contents (serve's dashboard reading bootstrap.ign's
/// certificates).
#[derive(Debug, Default, Clone, Copy)]
pub struct DropDataUrls;

impl LargeStrings for DropDataUrls {
    fn begin(&mut self, _offset: u64, head: &[u8]) -> bool {
        head.starts_with(b"data:")
    }
    fn piece(&mut self, _bytes: &[u8]) {}
    fn end(&mut self, _len: u64) -> String {
        "data:,".to_string()
    }
}

/// Why [`read_json_dropping_data_urls`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadJsonError {
    /// The file cannot be opened (`NotFound` when there is none).
    #[error("cannot open: {0}")]
    Open(#[source] io::Error),
    /// It cannot be read, or is not JSON.
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
}

/// Reads the JSON document at `path` as a stream, each string over `limit`
/// bytes that starts with `data:` replaced by the empty data URL `data:,`
/// unread ([`DropDataUrls`]): for readers of an Ignition config's small
/// files, in memory bounded by `limit` whatever the files it embeds.
///
/// # Errors
/// [`ReadJsonError::Open`] when the file cannot be opened,
/// [`ReadJsonError::Json`] when it cannot be read or is not JSON.
pub fn read_json_dropping_data_urls(
    path: &Path,
    limit: usize,
) -> Result<serde_json::Value, ReadJsonError> {
    let file = std::fs::File::open(path).map_err(ReadJsonError::Open)?;
    let reader = ElideLarge::new(
        io::BufReader::with_capacity(256 * 1024, file),
        limit,
        DropDataUrls,
    );
    serde_json::from_reader(reader).map_err(ReadJsonError::Json)
}

/// Where the adapter is in the JSON text.
#[derive(Debug)]
enum State {
    /// Between strings.
    Outside,
    /// In a string not yet longer than the limit; its content so far is
    /// in `head`, its first content byte at source offset `start`.
    Head { escape: bool, start: u64 },
    /// In a long string the sink declined: passing it through.
    Pass { escape: bool },
    /// In a string the sink elides, `len` content bytes so far.
    Elide { escape: bool, len: u64 },
}

/// A [`Read`] adapter that replaces JSON string literals longer than
/// `limit` bytes (as the sink decides) by the sink's short content; see the
/// [module documentation](self).
pub struct ElideLarge<R, S> {
    inner: R,
    sink: S,
    limit: usize,
    state: State,
    head: Vec<u8>,
    input: Box<[u8]>,
    in_pos: usize,
    in_len: usize,
    /// Source offset of `input[in_pos]`.
    offset: u64,
    out: Vec<u8>,
    out_pos: usize,
    eof: bool,
}

impl<R: Read, S: LargeStrings> ElideLarge<R, S> {
    /// Reads JSON text from `inner`, eliding the strings longer than
    /// `limit` bytes that `sink` accepts. Memory: about `limit` plus 64 KiB.
    pub fn new(inner: R, limit: usize, sink: S) -> Self {
        ElideLarge {
            inner,
            sink,
            limit,
            state: State::Outside,
            head: Vec::new(),
            input: vec![0; 64 * 1024].into_boxed_slice(),
            in_pos: 0,
            in_len: 0,
            offset: 0,
            out: Vec::new(),
            out_pos: 0,
            eof: false,
        }
    }

    /// The sink, e.g. to read what it gathered once the text was read.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Gives back the sink.
    pub fn into_sink(self) -> S {
        self.sink
    }

    /// Processes the buffered input until some output is ready or the
    /// input is used up.
    fn step(&mut self) {
        while self.in_pos < self.in_len && self.out.len() - self.out_pos < 64 * 1024 {
            let chunk = &self.input[self.in_pos..self.in_len];
            let used = match &mut self.state {
                State::Outside => match chunk.iter().position(|&b| b == b'"') {
                    Some(i) => {
                        self.out.extend_from_slice(&chunk[..=i]);
                        self.head.clear();
                        self.state = State::Head {
                            escape: false,
                            start: self.offset + i as u64 + 1,
                        };
                        i + 1
                    }
                    None => {
                        self.out.extend_from_slice(chunk);
                        chunk.len()
                    }
                },
                State::Head { escape, start } => {
                    let room = self.limit + 1 - self.head.len();
                    let take = chunk.len().min(room);
                    match string_end(&chunk[..take], escape) {
                        Some(i) => {
                            self.out.extend_from_slice(&self.head);
                            self.out.extend_from_slice(&chunk[..=i]);
                            self.head.clear();
                            self.state = State::Outside;
                            i + 1
                        }
                        None => {
                            self.head.extend_from_slice(&chunk[..take]);
                            if self.head.len() > self.limit {
                                let escape = *escape;
                                if self.sink.begin(*start, &self.head) {
                                    self.state = State::Elide {
                                        escape,
                                        len: self.head.len() as u64,
                                    };
                                } else {
                                    self.out.extend_from_slice(&self.head);
                                    self.state = State::Pass { escape };
                                }
                                self.head = Vec::new();
                            }
                            take
                        }
                    }
                }
                State::Pass { escape } => match string_end(chunk, escape) {
                    Some(i) => {
                        self.out.extend_from_slice(&chunk[..=i]);
                        self.state = State::Outside;
                        i + 1
                    }
                    None => {
                        self.out.extend_from_slice(chunk);
                        chunk.len()
                    }
                },
                State::Elide { escape, len } => match string_end(chunk, escape) {
                    Some(i) => {
                        self.sink.piece(&chunk[..i]);
                        let total = *len + i as u64;
                        let repl = self.sink.end(total);
                        self.out.extend_from_slice(repl.as_bytes());
                        self.out.push(b'"');
                        self.state = State::Outside;
                        i + 1
                    }
                    None => {
                        self.sink.piece(chunk);
                        *len += chunk.len() as u64;
                        chunk.len()
                    }
                },
            };
            self.in_pos += used;
            self.offset += used as u64;
        }
    }
}

/// The index of the closing quote in `bytes`, given whether the previous
/// byte was an unpaired `\`; updates `escape` for the bytes scanned when
/// there is none.
fn string_end(bytes: &[u8], escape: &mut bool) -> Option<usize> {
    for (i, &b) in bytes.iter().enumerate() {
        if *escape {
            *escape = false;
        } else if b == b'\\' {
            *escape = true;
        } else if b == b'"' {
            return Some(i);
        }
    }
    None
}

impl<R: Read, S: LargeStrings> Read for ElideLarge<R, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.out_pos < self.out.len() {
                let n = buf.len().min(self.out.len() - self.out_pos);
                buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
                self.out_pos += n;
                if self.out_pos == self.out.len() {
                    self.out.clear();
                    self.out_pos = 0;
                }
                return Ok(n);
            }
            if self.in_pos == self.in_len {
                if self.eof {
                    // A string still open at the end: give back what was held,
                    // so the parser reports the unterminated string.
                    if let State::Head { .. } = self.state {
                        self.state = State::Outside;
                        if !self.head.is_empty() {
                            self.out.append(&mut self.head);
                            continue;
                        }
                    }
                    return Ok(0);
                }
                let n = loop {
                    match self.inner.read(&mut self.input) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        r => break r?,
                    }
                };
                self.in_pos = 0;
                self.in_len = n;
                if n == 0 {
                    self.eof = true;
                    continue;
                }
            }
            self.step();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it elided and replaces it with `data:,#<n>`.
    #[derive(Default)]
    struct Record {
        seen: Vec<(u64, Vec<u8>, u64)>,
        current: Vec<u8>,
        start: u64,
    }

    impl LargeStrings for Record {
        fn begin(&mut self, offset: u64, head: &[u8]) -> bool {
            if !head.starts_with(b"data:") {
                return false;
            }
            self.start = offset;
            self.current = head.to_vec();
            true
        }
        fn piece(&mut self, bytes: &[u8]) {
            self.current.extend_from_slice(bytes);
        }
        fn end(&mut self, len: u64) -> String {
            self.seen
                .push((self.start, std::mem::take(&mut self.current), len));
            format!("data:,#{}", self.seen.len())
        }
    }

    /// Reads all of `text` through the adapter in reads of `chunk` bytes.
    fn run(text: &[u8], limit: usize, chunk: usize) -> (String, Record) {
        let mut r = ElideLarge::new(text, limit, Record::default());
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        (String::from_utf8(out).unwrap(), r.into_sink())
    }

    #[test]
    fn long_data_urls_are_replaced_and_everything_else_is_kept() {
        let big = format!("data:;base64,{}", "QUJD".repeat(50_000));
        let long_text = "x".repeat(300);
        let doc = format!(
            r#"{{"a":"short \"quoted\" \\","files":[{{"path":"/p","contents":{{"source":"{big}"}}}},{{"source":"{long_text}"}}],"b":"data:,tiny"}}"#
        );
        for chunk in [1, 7, 4096, 1 << 20] {
            let (out, rec) = run(doc.as_bytes(), 100, chunk);
            let want = format!(
                r#"{{"a":"short \"quoted\" \\","files":[{{"path":"/p","contents":{{"source":"data:,#1"}}}},{{"source":"{long_text}"}}],"b":"data:,tiny"}}"#
            );
            assert_eq!(out, want, "reads of {chunk} bytes");
            assert_eq!(rec.seen.len(), 1);
            let (offset, content, len) = &rec.seen[0];
            assert_eq!(content, big.as_bytes());
            assert_eq!(*len as usize, big.len());
            assert_eq!(
                &doc.as_bytes()[*offset as usize..][..big.len()],
                big.as_bytes()
            );
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["files"][0]["contents"]["source"], "data:,#1");
        }
    }

    #[test]
    fn an_escaped_quote_inside_a_long_string_does_not_end_it() {
        let big = format!("data:,{}\\\"{}", "a".repeat(200), "b".repeat(200));
        let doc = format!(r#"["{big}","after"]"#);
        let (out, rec) = run(doc.as_bytes(), 50, 13);
        assert_eq!(out, r#"["data:,#1","after"]"#);
        assert_eq!(rec.seen[0].1, big.as_bytes());
    }

    #[test]
    fn a_string_exactly_at_the_limit_is_kept() {
        let s = format!("data:{}", "z".repeat(95));
        assert_eq!(s.len(), 100);
        let doc = format!(r#"["{s}"]"#);
        let (out, rec) = run(doc.as_bytes(), 100, 3);
        assert_eq!(out, doc);
        assert!(rec.seen.is_empty());
    }

    #[test]
    fn an_unterminated_string_reaches_the_parser_as_it_was() {
        let doc = r#"{"a":"never closed"#;
        let (out, _) = run(doc.as_bytes(), 100, 5);
        assert_eq!(out, doc);
        assert!(serde_json::from_str::<serde_json::Value>(&out).is_err());
    }

    #[test]
    fn drop_data_urls_keeps_memory_to_the_limit() {
        let big = format!("data:;base64,{}", "A".repeat(3 << 20));
        let doc = format!(r#"{{"source":"{big}","k":1}}"#);
        let r = ElideLarge::new(doc.as_bytes(), 4096, DropDataUrls);
        let v: serde_json::Value = serde_json::from_reader(r).unwrap();
        assert_eq!(v, serde_json::json!({"source": "data:,", "k": 1}));
    }
}
