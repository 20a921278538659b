//! Reading an answer's body with a byte cap: a declared `Content-Length` over the cap is refused
//! before reading, and a body that lies about its size (or declares none) is streamed and
//! dropped as soon as it passes the cap, so at most `cap` bytes plus one frame are held.

use http::HeaderMap;
use http_body_util::BodyExt;

use super::error::describe;

#[derive(Debug)]
pub(crate) enum ReadError {
    TooLarge,
    /// The body broke off (a reset connection, a failed decode of the transfer).
    Transport(String),
}

/// The whole body, or `TooLarge` once it passes `cap` bytes.
pub(crate) async fn read_capped<B>(
    headers: &HeaderMap,
    body: &mut B,
    cap: u64,
) -> Result<Vec<u8>, ReadError>
where
    B: BodyExt + Unpin,
    B::Data: AsRef<[u8]>,
    B::Error: std::error::Error + 'static,
{
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > cap) {
        return Err(ReadError::TooLarge);
    }
    // Trust the declared size only for the first allocation, and never beyond 1 MiB of it.
    let mut out =
        Vec::with_capacity(usize::try_from(declared.unwrap_or(0).min(1 << 20)).unwrap_or(0));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ReadError::Transport(describe(&e)))?;
        if let Ok(data) = frame.into_data() {
            let chunk = data.as_ref();
            if out.len() as u64 + chunk.len() as u64 > cap {
                return Err(ReadError::TooLarge);
            }
            out.extend_from_slice(chunk);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    fn body(bytes: &'static [u8]) -> Full<&'static [u8]> {
        Full::new(bytes)
    }

    #[tokio::test]
    async fn reads_up_to_the_cap() {
        let h = HeaderMap::new();
        assert_eq!(
            read_capped(&h, &mut body(b"12345"), 5).await.unwrap(),
            b"12345"
        );
        assert!(matches!(
            read_capped(&h, &mut body(b"123456"), 5).await,
            Err(ReadError::TooLarge)
        ));
    }

    #[tokio::test]
    async fn a_declared_size_over_the_cap_is_refused_unread() {
        let mut h = HeaderMap::new();
        h.insert(http::header::CONTENT_LENGTH, "999".parse().unwrap());
        assert!(matches!(
            read_capped(&h, &mut body(b"1"), 5).await,
            Err(ReadError::TooLarge)
        ));
    }
}
