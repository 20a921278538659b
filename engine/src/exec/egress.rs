//! A stage's egress by host: an HTTP proxy that opens a tunnel (`CONNECT host:port`) only to
//! the host and port pairs the stage declares (docs/egress.md).
//!
//! The engine serves it, from outside the stage's network namespace, on a loopback socket made
//! inside it: the stage's children reach nothing else, resolve no name themselves and send no
//! UDP. The tunnel is TLS end to end, so the proxy sees no content; it keeps counts and the first
//! refused target, never a byte of what passes. Everything it reads from a child is bounded: the
//! request head's size and the time it takes to arrive, the time a connect may take.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// The host and port pairs a stage may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    pairs: Vec<(String, u16)>,
}

impl Allowed {
    /// The pairs `(host, port)`; hosts are compared without case and without a trailing dot.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, u16)>) -> Self {
        Self {
            pairs: pairs
                .into_iter()
                .map(|(host, port)| (normal(host), port))
                .collect(),
        }
    }

    /// Whether `host:port` is declared.
    pub fn admits(&self, host: &str, port: u16) -> bool {
        let host = normal(host);
        self.pairs.iter().any(|(h, p)| *h == host && *p == port)
    }
}

/// A host name as compared: lowercase, without a trailing dot, without IPv6 brackets.
fn normal(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// What the proxy bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest request head it reads.
    pub head: usize,
    /// How long the request head may take to arrive.
    pub head_time: Duration,
    /// How long a connect to a declared host may take.
    pub connect_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            head: 8 * 1024,
            head_time: Duration::from_secs(10),
            connect_time: Duration::from_secs(10),
        }
    }
}

/// What the proxy did, for the stage's log: counts and the first refused target.
#[derive(Debug, Default)]
pub struct Tally {
    tunnels: AtomicU64,
    refused: AtomicU64,
    first_refused: Mutex<Option<String>>,
}

impl Tally {
    /// Tunnels opened.
    pub fn tunnels(&self) -> u64 {
        self.tunnels.load(Ordering::Relaxed)
    }

    /// Requests refused.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The first refused request's target and why, if any.
    pub fn first_refused(&self) -> Option<String> {
        self.first_refused.lock().ok().and_then(|g| g.clone())
    }

    fn refuse(&self, what: String) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut first) = self.first_refused.lock() {
            first.get_or_insert(what);
        }
    }
}

/// Serves `listener` until the task is dropped or aborted: each connection on a task of its own.
pub async fn serve(
    listener: TcpListener,
    allowed: Arc<Allowed>,
    limits: Limits,
    tally: Arc<Tally>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (allowed, tally) = (allowed.clone(), tally.clone());
        tokio::spawn(async move {
            let _ = handle(stream, &allowed, limits, &tally).await;
        });
    }
}

/// A refusal: the status line sent, and what the tally keeps.
struct Refusal {
    status: &'static str,
    why: String,
}

impl Refusal {
    fn new(status: &'static str, why: impl Into<String>) -> Self {
        Self {
            status,
            why: why.into(),
        }
    }
}

/// One connection: its request head, then a tunnel or a refusal.
async fn handle(
    mut client: TcpStream,
    allowed: &Allowed,
    limits: Limits,
    tally: &Tally,
) -> io::Result<()> {
    let head =
        match tokio::time::timeout(limits.head_time, read_head(&mut client, limits.head)).await {
            Err(_) => {
                tally.refuse("a request head that did not arrive in time".into());
                return Ok(());
            }
            Ok(Err(e)) => return Err(e),
            Ok(Ok(head)) => head,
        };
    let (host, port, rest) = match head.and_then(|(bytes, end)| target(&bytes, end, allowed)) {
        Ok(found) => found,
        Err(refusal) => {
            tally.refuse(refusal.why);
            let line = format!(
                "HTTP/1.1 {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                refusal.status
            );
            client.write_all(line.as_bytes()).await?;
            return close(client).await;
        }
    };
    let upstream = match tokio::time::timeout(
        limits.connect_time,
        TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(e)) => {
            tally.refuse(format!("{host}:{port}: {e}"));
            client
                .write_all(
                    b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await?;
            return close(client).await;
        }
        Err(_) => {
            tally.refuse(format!("{host}:{port}: no answer in time"));
            client
                .write_all(b"HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await?;
            return close(client).await;
        }
    };
    tally.tunnels.fetch_add(1, Ordering::Relaxed);
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    let mut upstream = upstream;
    // What the client sent after its head already belongs to the tunnel.
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Ends a refused connection so that the client reads the answer: the write side shut, then
/// what the client still sends read and dropped (at most 64 KiB, for at most a second), since a
/// socket closed with unread bytes is reset and a reset may discard the answer.
async fn close(mut client: TcpStream) -> io::Result<()> {
    client.shutdown().await?;
    let mut sink = [0u8; 4096];
    let mut left: usize = 64 * 1024;
    let drain = async {
        while left > 0 {
            match client.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    Ok(())
}

/// Reads a request head (up to and including its blank line) of at most `limit` bytes: the
/// bytes read and where the head ends in them, or the refusal of a head too large.
async fn read_head(
    client: &mut TcpStream,
    limit: usize,
) -> io::Result<Result<(Vec<u8>, usize), Refusal>> {
    let mut bytes = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = find_end(&bytes) {
            return Ok(Ok((bytes, end)));
        }
        if bytes.len() >= limit {
            return Ok(Err(Refusal::new(
                "431 Request Header Fields Too Large",
                format!("a request head over {limit} bytes"),
            )));
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Err(Refusal::new(
                "400 Bad Request",
                "a request head cut short",
            )));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// At most `n` characters of what a child sent, for the tally: printable ASCII, anything else
/// shown as `?` (it reaches the run's log, where a control character could forge a line).
fn printable(text: &str, n: usize) -> String {
    text.chars()
        .take(n)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect()
}

/// Where the head ends (after its `\r\n\r\n`), if it has.
fn find_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// The declared target of a `CONNECT` head, and what followed the head; or why not.
fn target(bytes: &[u8], end: usize, allowed: &Allowed) -> Result<(String, u16, Vec<u8>), Refusal> {
    let head = std::str::from_utf8(&bytes[..end])
        .map_err(|_| Refusal::new("400 Bad Request", "a request head that is not text"))?;
    let line = head.lines().next().unwrap_or_default();
    let mut words = line.split(' ');
    let (method, authority, version) = (words.next(), words.next(), words.next());
    let (Some(method), Some(authority), Some(version), None) =
        (method, authority, version, words.next())
    else {
        return Err(Refusal::new(
            "400 Bad Request",
            "a request line of another shape",
        ));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(Refusal::new(
            "400 Bad Request",
            "a request of another protocol",
        ));
    }
    if method != "CONNECT" {
        let shown = printable(method, 16);
        return Err(Refusal::new(
            "405 Method Not Allowed",
            format!("a {shown} request: only tunnels (CONNECT) are served"),
        ));
    }
    let (host, port) = authority
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        .filter(|(h, _)| !h.is_empty())
        .ok_or_else(|| Refusal::new("400 Bad Request", "a target without a host and port"))?;
    let shown = printable(authority, 80);
    if !allowed.admits(host, port) {
        return Err(Refusal::new(
            "403 Forbidden",
            format!("{shown}: not declared in the stage's `network`"),
        ));
    }
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .to_owned();
    Ok((host, port, bytes[end..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proxy on a loopback port for `allowed`, and its tally.
    async fn proxy(
        allowed: Allowed,
        limits: Limits,
    ) -> (u16, Arc<Tally>, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let tally = Arc::new(Tally::default());
        let task = tokio::spawn(serve(listener, Arc::new(allowed), limits, tally.clone()));
        (port, tally, task)
    }

    /// An echo server on a loopback port.
    async fn echo() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        port
    }

    /// Sends `request` to the proxy and returns its first answer line and the stream.
    async fn ask(proxy: u16, request: &[u8]) -> (String, TcpStream) {
        let mut s = TcpStream::connect(("127.0.0.1", proxy))
            .await
            .expect("connect");
        s.write_all(request).await.expect("write");
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            match s.read(&mut byte).await.expect("read") {
                0 => break,
                _ => answer.push(byte[0]),
            }
        }
        let text = String::from_utf8_lossy(&answer).into_owned();
        (text.lines().next().unwrap_or_default().to_owned(), s)
    }

    #[test]
    fn hosts_are_compared_without_case_or_a_trailing_dot() {
        let allowed = Allowed::new([("API.example.com", 443), ("::1", 8443)]);
        assert!(allowed.admits("api.Example.com.", 443));
        assert!(allowed.admits("[::1]", 8443));
        assert!(!allowed.admits("api.example.com", 80));
        assert!(!allowed.admits("evil.api.example.com", 443));
        assert!(!allowed.admits("api.example.com.evil", 443));
    }

    #[tokio::test]
    async fn a_declared_pair_gets_a_tunnel_and_the_bytes_after_the_head_go_through_it() {
        let target = echo().await;
        let (port, tally, _task) =
            proxy(Allowed::new([("127.0.0.1", target)]), Limits::default()).await;
        let request =
            format!("CONNECT 127.0.0.1:{target} HTTP/1.1\r\nHost: 127.0.0.1:{target}\r\n\r\nearly");
        let (line, mut s) = ask(port, request.as_bytes()).await;
        assert_eq!(line, "HTTP/1.1 200 Connection established");
        let mut got = [0u8; 5];
        s.read_exact(&mut got).await.expect("early bytes echoed");
        assert_eq!(&got, b"early");
        s.write_all(b"ping").await.expect("write");
        let mut got = [0u8; 4];
        s.read_exact(&mut got).await.expect("echo");
        assert_eq!(&got, b"ping");
        assert_eq!((tally.tunnels(), tally.refused()), (1, 0));
    }

    #[tokio::test]
    async fn a_pair_not_declared_is_refused_and_kept_in_the_tally() {
        let target = echo().await;
        let other = echo().await;
        let (port, tally, _task) =
            proxy(Allowed::new([("127.0.0.1", target)]), Limits::default()).await;
        let (line, _) = ask(
            port,
            format!("CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(line, "HTTP/1.1 403 Forbidden");
        let (line, _) = ask(
            port,
            format!("CONNECT localhost:{target} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(line, "HTTP/1.1 403 Forbidden", "a name is not its address");
        assert_eq!((tally.tunnels(), tally.refused()), (0, 2));
        let first = tally.first_refused().expect("kept");
        assert!(
            first.starts_with(&format!("127.0.0.1:{other}: not declared")),
            "{first}"
        );
    }

    #[tokio::test]
    async fn what_a_refusal_keeps_is_printable() {
        let (port, tally, _task) = proxy(Allowed::new([("127.0.0.1", 1)]), Limits::default()).await;
        let (line, _) = ask(port, b"CONNECT evil\x1b[2J\rhost:443 HTTP/1.1\r\n\r\n").await;
        assert_eq!(line, "HTTP/1.1 403 Forbidden");
        let first = tally.first_refused().expect("kept");
        assert!(first.starts_with("evil?[2J?host:443"), "{first:?}");
    }

    #[tokio::test]
    async fn only_tunnels_are_served() {
        let target = echo().await;
        let (port, tally, _task) =
            proxy(Allowed::new([("127.0.0.1", target)]), Limits::default()).await;
        let get = format!("GET http://127.0.0.1:{target}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let (line, _) = ask(port, get.as_bytes()).await;
        assert_eq!(line, "HTTP/1.1 405 Method Not Allowed");
        let (line, _) = ask(port, b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n").await;
        assert_eq!(line, "HTTP/1.1 400 Bad Request");
        let (line, _) = ask(port, b"CONNECT 127.0.0.1:1 SMTP\r\n\r\n").await;
        assert_eq!(line, "HTTP/1.1 400 Bad Request");
        assert_eq!((tally.tunnels(), tally.refused()), (0, 3));
    }

    #[tokio::test]
    async fn a_head_too_large_or_too_slow_is_refused() {
        let limits = Limits {
            head: 256,
            head_time: Duration::from_millis(200),
            connect_time: Duration::from_secs(10),
        };
        let (port, tally, _task) = proxy(Allowed::new([("127.0.0.1", 1)]), limits).await;
        let huge = format!(
            "CONNECT 127.0.0.1:1 HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(1024)
        );
        let (line, _) = ask(port, huge.as_bytes()).await;
        assert_eq!(line, "HTTP/1.1 431 Request Header Fields Too Large");
        // A head that never ends: the proxy closes the connection (the read sees its end; the
        // bound on the wait is a margin, not the subject).
        let mut s = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        s.write_all(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n")
            .await
            .expect("write");
        let mut rest = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut rest))
            .await
            .expect("closed by the proxy")
            .expect("read");
        assert_eq!(n, 0, "nothing is answered to a head that never ends");
        assert_eq!(tally.refused(), 2);
    }

    #[tokio::test]
    async fn a_declared_host_that_does_not_answer_gives_a_bad_gateway() {
        // A port no one listens on: bind one, then close it.
        let closed = {
            let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            l.local_addr().expect("addr").port()
        };
        let (port, tally, _task) =
            proxy(Allowed::new([("127.0.0.1", closed)]), Limits::default()).await;
        let (line, _) = ask(
            port,
            format!("CONNECT 127.0.0.1:{closed} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(line, "HTTP/1.1 502 Bad Gateway");
        assert_eq!((tally.tunnels(), tally.refused()), (0, 1));
    }
}
