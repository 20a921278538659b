//! What the model API proxy adds to a request: the same small streamed answer asked of a fake
//! model API on loopback directly, and through a proxy to it (the stand-in swapped for the key,
//! the answer's usage read as it streams past). The difference of the two is the proxy's
//! latency per request (docs/performance.md).
//!
//! `cargo bench -p reviewflow-stdlib --bench proxy`

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use criterion::{Criterion, criterion_group, criterion_main};
use reviewflow_engine::exec::secret::SecretValue;
use reviewflow_stdlib::reviewer::SecretEnv;
use reviewflow_stdlib::reviewer::proxy::{ModelProxy, Upstream};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A streamed answer of a few events, as Anthropic's API sends one, with its usage.
const ANSWER: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"looks fine\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/// The fake API: reads a request's head and body, answers [`ANSWER`], closes.
async fn fake_api(listener: tokio::net::TcpListener) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let Ok(n) = stream.read(&mut buf).await else {
                    return;
                };
                if n == 0 {
                    return;
                }
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if seen.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                ANSWER.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(ANSWER.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// One request to `port` with `auth`, read to its end.
fn ask(port: u16, auth: &str) -> usize {
    let body = r#"{"model":"m","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}"#;
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{auth}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("answer");
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    answer.len()
}

fn proxy(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (api_port, proxy) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("listen");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(fake_api(listener));
        let upstream = Upstream::parse(&format!("http://127.0.0.1:{port}")).expect("upstream");
        let key = SecretEnv::one(
            "ANTHROPIC_API_KEY",
            "model-key",
            SecretValue::from("sk-ant-api03-bench-key-0123456789"),
        )
        .pool();
        (port, ModelProxy::start(upstream, &[key]).expect("proxy"))
    });
    let stand_in = format!("x-api-key: {}\r\n", proxy.stand_ins()[0].1.as_str());
    let real = "x-api-key: sk-ant-api03-bench-key-0123456789\r\n";
    let mut group = c.benchmark_group("proxy");
    group.bench_function("a streamed answer, directly", |b| {
        b.iter(|| ask(api_port, real));
    });
    group.bench_function("a streamed answer, through the proxy", |b| {
        b.iter(|| ask(proxy.port(), &stand_in));
    });
    group.finish();
    drop(proxy);
    drop(runtime);
}

criterion_group!(benches, proxy);
criterion_main!(benches);
