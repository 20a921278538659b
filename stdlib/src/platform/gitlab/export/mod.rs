//! `export gitlab`: the `.gitlab-ci.yml` of a pipeline (docs/gitlab.md, "The exported
//! pipeline"), written from the engine's partition of its stages into jobs.

pub mod fit;
pub mod pipeline;

use reviewflow_engine::export::target::option;
use reviewflow_engine::export::{ExportOption, Exporter, Request};

use pipeline::{Source, pipeline};

/// The GitLab platform's exporter: a `.gitlab-ci.yml`.
#[derive(Debug)]
pub struct PipelineExporter;

const IMAGE: &str = "image";

impl PipelineExporter {
    fn image<'a>(options: &'a [(&'static str, String)]) -> Result<&'a str, String> {
        let text = option(options, IMAGE).ok_or_else(|| {
            "--image is required: the image every job runs in, pinned by digest \
             (IMAGE@sha256:<64 hex digits>), holding reviewflow and the reviewers the stages name"
                .to_owned()
        })?;
        parse_image(text).map_err(|message| format!("--image {message}"))?;
        Ok(text)
    }
}

/// `IMAGE@sha256:<64 lowercase hex digits>`. A tag can be moved to another image after the
/// pipeline was reviewed, so only a digest is taken (as an action is pinned by commit on
/// GitHub).
pub fn parse_image(text: &str) -> Result<(), String> {
    let Some((name, digest)) = text.split_once('@') else {
        return Err(format!(
            "`{}`: give the image by digest, IMAGE@sha256:<64 hex digits>: a tag can be moved \
             to another image after the pipeline was reviewed",
            text.escape_debug()
        ));
    };
    // A registry host (with a port), a path and no tag or second digest: what needs no quoting.
    let name_ok = !name.is_empty()
        && !name.starts_with(['/', '.', '-', ':'])
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._/:-".contains(&b));
    if !name_ok {
        return Err(format!(
            "`{}`: the image's name is a registry path (lowercase letters, digits, `.`, `_`, \
             `/`, `:`, `-`)",
            name.escape_debug()
        ));
    }
    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!(
            "`{}`: the digest must be sha256:<64 lowercase hex digits>",
            digest.escape_debug()
        ));
    }
    Ok(())
}

impl Exporter for PipelineExporter {
    fn about(&self) -> &'static str {
        "A GitLab CI pipeline: one job per group of stages that must share a machine"
    }

    fn options(&self) -> &'static [ExportOption] {
        &[ExportOption {
            name: IMAGE,
            value_name: "IMAGE@sha256:DIGEST",
            help: "The image every job runs in, by digest (required; it holds reviewflow and \
                   the reviewers the stages name)",
        }]
    }

    fn check_options(&self, options: &[(&'static str, String)]) -> Result<(), String> {
        Self::image(options).map(|_| ())
    }

    fn export(&self, request: &Request<'_>) -> Result<String, String> {
        let image = Self::image(request.options)?;
        fit::judge(request.pipeline, request.registry, request.source)?;
        pipeline(&Source {
            pipeline: request.pipeline,
            registry: request.registry,
            dag: request.dag,
            flow: request.flow,
            file: request.file,
            image,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_pinned_by_digest() {
        let hex = "0123456789abcdef".repeat(4);
        assert!(parse_image(&format!("registry.example.com/reviewflow@sha256:{hex}")).is_ok());
        assert!(parse_image(&format!("registry.example.com:5000/a/b@sha256:{hex}")).is_ok());
        for bad in [
            "registry.example.com/reviewflow:1.0".to_owned(),
            "registry.example.com/reviewflow".to_owned(),
            format!("registry.example.com/reviewflow:1.0@sha512:{hex}"),
            format!("registry.example.com/reviewflow@sha256:{}", &hex[..63]),
            format!(
                "registry.example.com/reviewflow@sha256:{}",
                hex.to_uppercase()
            ),
            format!("Registry/x@sha256:{hex}"),
            format!("reg istry/x@sha256:{hex}"),
            format!("@sha256:{hex}"),
            format!("x@y@sha256:{hex}"),
        ] {
            assert!(parse_image(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_missing_image_is_refused() {
        let e = PipelineExporter.check_options(&[]).expect_err("refused");
        assert!(e.contains("--image is required"), "{e}");
        let e = PipelineExporter
            .check_options(&[(IMAGE, "alpine:3".into())])
            .expect_err("refused");
        assert!(e.contains("by digest"), "{e}");
    }
}
