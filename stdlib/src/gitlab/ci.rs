//! The CI routes the `gitlab-artifacts` store reads: the project's pipelines, a pipeline's jobs,
//! whether a branch is protected, and one file of a job's artifacts. Every argument that reaches
//! a route is a number, or checked and percent-encoded here.

use http::Method;
use serde::Deserialize;

use super::client::{ACCEPT_ANY, percent_encode};
use super::{Client, GitlabError, Paging};

/// A pipeline as GitLab lists it (`GET /projects/:id/pipelines`) and embeds it in a job: the
/// facts GitLab records, none of which the pipeline's configuration writes.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct PipelineInfo {
    pub id: u64,
    #[serde(default)]
    pub project_id: Option<u64>,
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    #[serde(default)]
    pub sha: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    /// `schedule`, `trigger`, `merge_request_event`, …; left out by GitLab before 14.
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
}

/// One file a job's artifacts hold, as `artifacts` lists it (`archive` is the zip of `paths:`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct JobArtifact {
    pub file_type: String,
    #[serde(default)]
    pub size: Option<u64>,
}

/// A job of a pipeline (`GET /projects/:id/pipelines/:pipeline_id/jobs`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Job {
    pub id: u64,
    pub name: String,
    pub status: String,
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// The job ran for a tag, whose name may equal a branch's.
    #[serde(default)]
    pub tag: bool,
    pub pipeline: PipelineInfo,
    #[serde(default)]
    pub artifacts: Vec<JobArtifact>,
    #[serde(default)]
    pub artifacts_expire_at: Option<String>,
}

impl Job {
    /// Whether the job has the zip of its `artifacts: paths:` (an expired one is gone).
    pub fn has_archive(&self) -> bool {
        self.artifacts.iter().any(|a| a.file_type == "archive")
    }
}

/// What to ask of the pipelines listing: GitLab filters by these, and every pipeline is judged
/// again all the same.
#[derive(Clone, Debug, Default)]
pub struct PipelineFilter {
    pub git_ref: Option<String>,
    pub source: Option<String>,
}

/// The most bytes of pages of pipelines read.
const MAX_PIPELINE_PAGE_BYTES: u64 = 64 << 20;

impl Client {
    /// The project's numeric id (`GET /projects/:id`), for a project named by its path.
    pub async fn project_numeric_id(&self) -> Result<u64, GitlabError> {
        #[derive(Deserialize)]
        struct Project {
            id: u64,
        }
        let project: Project = self.get_json(&self.project_route()).await?;
        Ok(project.id)
    }

    /// The project's pipelines of branches (not tags), newest first, 100 a page, at most
    /// `max_pages` pages.
    pub async fn branch_pipelines(
        &self,
        filter: &PipelineFilter,
        max_pages: usize,
    ) -> Result<(Vec<PipelineInfo>, Paging), GitlabError> {
        let mut route = format!(
            "{}/pipelines?scope=branches&order_by=id&sort=desc&per_page=100",
            self.project_route()
        );
        if let Some(r) = &filter.git_ref {
            route.push_str(&format!("&ref={}", percent_encode(r)));
        }
        if let Some(s) = &filter.source {
            route.push_str(&format!("&source={}", percent_encode(s)));
        }
        let (mut pipelines, paging) = self
            .get_pages(&route, max_pages, MAX_PIPELINE_PAGE_BYTES, |_| false)
            .await?;
        // Newest first whatever order a server keeps: ids only grow.
        pipelines.sort_by_key(|p: &PipelineInfo| std::cmp::Reverse(p.id));
        Ok((pipelines, paging))
    }

    /// A pipeline's successful jobs, one page of 100 (a review's pipeline has a few).
    pub async fn successful_jobs(&self, pipeline: u64) -> Result<Vec<Job>, GitlabError> {
        let route = format!(
            "{}/pipelines/{pipeline}/jobs?{}=success&per_page=100",
            self.project_route(),
            percent_encode("scope[]")
        );
        self.get_json(&route).await
    }

    /// Whether `branch` is a protected branch of the project by its own name: `GET
    /// …/protected_branches/:name` answers 404 for one that is not.
    pub async fn is_protected_branch(&self, branch: &str) -> Result<bool, GitlabError> {
        let route = format!(
            "{}/protected_branches/{}",
            self.project_route(),
            percent_encode(branch)
        );
        match self.get_json::<serde_json::Value>(&route).await {
            Ok(_) => Ok(true),
            Err(e) if e.status() == Some(404) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// One file of a job's artifacts (`GET /projects/:id/jobs/:job_id/artifacts/*path`), read
    /// up to `max_bytes`: `None` when the job's artifacts hold no such file (404). A declared
    /// length over the cap is refused before the body is read.
    pub async fn job_artifact_file(
        &self,
        job: u64,
        path: &str,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, GitlabError> {
        let segments: Vec<String> = path.split('/').map(percent_encode).collect();
        if path.is_empty()
            || path
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(GitlabError::Invalid(format!(
                "{:?} is not a path inside a job's artifacts",
                crate::github::error::quote(path)
            )));
        }
        let route = format!(
            "{}/jobs/{job}/artifacts/{}",
            self.project_route(),
            segments.join("/")
        );
        let uri = self.absolute(&route)?;
        match self
            .call_accepting(Method::GET, &uri, &route, None, max_bytes, ACCEPT_ANY)
            .await
        {
            Ok(reply) => Ok(Some(reply.body)),
            Err(e) if e.status() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
