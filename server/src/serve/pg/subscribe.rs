//! `COPY (SUBSCRIBE TO name) TO STDOUT` on the Postgres door (ADR 0054): a COPY that never
//! ends, whose lines are the relation's rows and then its changes, each as `_commit_version`,
//! `_diff` and the row's columns in Postgres's text format. Each line is flushed as soon as
//! no other is ready, so a client sees a change as soon as its commit is held. psql and
//! psycopg's `copy()` read it; the COPY ends when the client goes away.

use std::fmt::Debug;
use std::sync::Arc;

use futures::{FutureExt, Sink, SinkExt, StreamExt, stream};
use pgwire::api::results::{CopyResponse, Response};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyOutResponse};
use pondra_cluster::Node;

use super::copy_out::CopyOut;
use super::{error_info, user_error};

/// The never-ending COPY of `relation`'s changes.
pub(super) fn subscription(node: &Arc<Node>, relation: &str) -> PgWireResult<Response> {
    let subscription = match node.subscribe(relation) {
        Ok(subscription) => subscription,
        Err(e) => return Ok(Response::Error(Box::new(error_info(e.to_string())))),
    };
    let schema = subscription.schema();
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let columns = names.len();
    let lines = stream::unfold(Some(subscription), move |held| {
        let names = names.clone();
        let format = CopyOut::text(String::new());
        async move {
            let mut subscription = held?;
            match subscription.next().await {
                Ok(change) => {
                    let lines = format.lines(&names, vec![change]);
                    let data = lines.into_iter().map(|l| Ok(CopyData::new(l.into())));
                    Some((stream::iter(data).boxed(), Some(subscription)))
                }
                Err(e) => {
                    let failed = user_error("XX000", format!("the subscription stopped: {e}"));
                    Some((stream::iter([Err(failed)]).boxed(), None))
                }
            }
        }
    });
    Ok(Response::CopyOut(CopyResponse::new(
        0,
        columns,
        lines.flatten(),
    )))
}

/// Sends a COPY TO STDOUT as pgwire does, but flushing whenever the next line is not ready
/// yet: a finite COPY goes out in one flush, a subscription's lines as they come.
pub(super) async fn send_copy_out<C>(client: &mut C, response: CopyResponse) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let formats = response.column_formats();
    let CopyResponse {
        format,
        columns,
        mut data_stream,
        ..
    } = response;
    let header = CopyOutResponse::new(format, columns as i16, formats);
    client
        .send(PgWireBackendMessage::CopyOutResponse(header))
        .await?;
    let mut rows = 0;
    loop {
        let next = match data_stream.next().now_or_never() {
            Some(next) => next,
            None => {
                client.flush().await?;
                data_stream.next().await
            }
        };
        match next {
            None => break,
            Some(Ok(data)) => {
                rows += 1;
                client.feed(PgWireBackendMessage::CopyData(data)).await?;
            }
            Some(Err(e)) => {
                let fail = CopyFail::new(e.to_string());
                client.send(PgWireBackendMessage::CopyFail(fail)).await?;
                return Err(e);
            }
        }
    }
    client
        .send(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    let tag = pgwire::api::results::Tag::new("COPY").with_rows(rows);
    client
        .send(PgWireBackendMessage::CommandComplete(tag.into()))
        .await?;
    Ok(())
}
