//! Models in SQL (ADR 0082): the node's side of `ai_embed` and `ai_complete`. Every statement
//! is given a way to the models (`give_models`): the lake's cached answers from the latest
//! snapshot, and the endpoint of the secret of type `openai`, opened on the statement's first
//! call. The answers the endpoint gave are committed once the statement ends
//! (`keep_model_answers`), in a commit of their own, whether it succeeded or not: they were
//! paid for.

pub(crate) mod openai;
pub(crate) mod secrets;

use std::future::Future;
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use bytes::Bytes;
use pondra_catalog::{CatalogError, Change, ModelAnswer};
use pondra_exec::{ExecError, ModelAccess, StatementControl, StatementModels};

use crate::node::Node;
use crate::sessions::session::Session;
use openai::Endpoint;

/// How often a statement waiting on the endpoint looks whether it was stopped.
const STOP_CHECK: Duration = Duration::from_millis(50);

impl Node {
    /// Gives the statement `control` runs for `session` its way to the models.
    pub(crate) fn give_models(self: &Arc<Self>, control: &StatementControl, session: &Session) {
        let access = NodeModels {
            node: self.clone(),
            chosen: session.parameter(secrets::SECRET_SETTING),
            runtime: tokio::runtime::Handle::current(),
            endpoint: OnceLock::new(),
        };
        control.give_models(StatementModels::new(Arc::new(access)));
    }

    /// Commits the answers the endpoint gave the statement `control` ran, if it got any.
    pub(crate) async fn keep_model_answers(&self, control: &StatementControl) {
        let Some(models) = control.models() else {
            return;
        };
        let answers: Vec<ModelAnswer> = models
            .take_fresh()
            .into_iter()
            .map(|(key, value)| ModelAnswer {
                key,
                value: value.to_vec(),
            })
            .collect();
        if answers.is_empty() {
            return;
        }
        match self
            .catalog
            .commit(vec![Change::SaveAnswers { answers }])
            .await
        {
            // A node that only reads keeps nothing; the next call asks again.
            Ok(_) | Err(CatalogError::ReadOnly) => {}
            Err(e) => eprintln!("a statement's model answers could not be kept in the lake: {e}"),
        }
    }
}

/// A statement's way to the models, through its node.
struct NodeModels {
    node: Arc<Node>,
    /// The secret the session named (`SET pondra.ai_secret`), if it named one.
    chosen: Option<String>,
    /// Where the endpoint's requests run, off the executor's threads.
    runtime: tokio::runtime::Handle,
    /// The endpoint, once the statement's first call opened its secret.
    endpoint: OnceLock<Result<Arc<Endpoint>, String>>,
}

impl NodeModels {
    /// The endpoint of the statement's secret, opened by its first call; a failure to open
    /// it is every later call's too, a stop is only that call's.
    fn endpoint(&self, control: &StatementControl) -> pondra_exec::Result<Arc<Endpoint>> {
        if let Some(opened) = self.endpoint.get() {
            return opened.clone().map_err(ExecError::Execution);
        }
        let (node, chosen) = (self.node.clone(), self.chosen.clone());
        let opening = async move {
            let opened = node.model_endpoint(chosen.as_deref()).await;
            opened.map_err(|e| e.to_string())
        };
        let opened = match self.wait(control, opening) {
            Ok(endpoint) => Ok(Arc::new(endpoint)),
            Err(ExecError::Execution(message)) => Err(message),
            Err(stopped) => return Err(stopped),
        };
        // Workers that opened it at once agree on the first.
        let kept = self.endpoint.get_or_init(|| opened);
        kept.clone().map_err(ExecError::Execution)
    }

    /// Runs `work` on the node's runtime and waits for it, or for `control` to stop the
    /// statement, which abandons it. The executor's thread only waits: it may be any thread.
    fn wait<T: Send + 'static>(
        &self,
        control: &StatementControl,
        work: impl Future<Output = Result<T, String>> + Send + 'static,
    ) -> pondra_exec::Result<T> {
        let (done, answer) = mpsc::channel();
        let task = self.runtime.spawn(async move {
            let _ = done.send(work.await);
        });
        loop {
            match answer.recv_timeout(STOP_CHECK) {
                Ok(result) => return result.map_err(ExecError::Execution),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(stopped) = control.check() {
                        task.abort();
                        return Err(stopped);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ExecError::Execution(
                        "the request to the model's endpoint ended without an answer".into(),
                    ));
                }
            }
        }
    }
}

impl ModelAccess for NodeModels {
    fn cached(&self, keys: &[&str]) -> Vec<Option<Bytes>> {
        let snapshot = self.node.snapshot();
        keys.iter()
            .map(|key| snapshot.answers.get(key).cloned())
            .collect()
    }

    fn embed(
        &self,
        model: &str,
        inputs: &[String],
        control: &StatementControl,
    ) -> pondra_exec::Result<Vec<Vec<f32>>> {
        let endpoint = self.endpoint(control)?;
        let (model, inputs) = (model.to_string(), inputs.to_vec());
        self.wait(control, async move { endpoint.embed(&model, inputs).await })
    }

    fn complete(
        &self,
        model: &str,
        prompts: &[String],
        control: &StatementControl,
    ) -> pondra_exec::Result<Vec<String>> {
        let endpoint = self.endpoint(control)?;
        let (model, prompts) = (model.to_string(), prompts.to_vec());
        self.wait(
            control,
            async move { endpoint.complete(&model, prompts).await },
        )
    }
}
