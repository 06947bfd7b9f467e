//! The Iceberg REST catalog on `/iceberg` (ADR 0058): what PyIceberg's `RestCatalog`, Spark
//! and Trino ask of a catalog to find and read tables. A namespace is a schema of the lake
//! (`public` for the tables not in one); its tables are those published as Iceberg, each
//! loaded as its newest metadata file. Commits through the catalog are refused by name.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pondra_cluster::Node;
use serde_json::{Value, json};

use super::Server;

pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/v1/config", get(config))
        .route("/v1/namespaces", get(namespaces).post(refused))
        .route(
            "/v1/namespaces/{namespace}",
            get(namespace).head(namespace).delete(refused),
        )
        .route(
            "/v1/namespaces/{namespace}/tables",
            get(tables).post(refused),
        )
        .route(
            "/v1/namespaces/{namespace}/tables/{table}",
            get(load_table)
                .head(table_exists)
                .post(refused)
                .delete(refused),
        )
        .with_state(server)
}

/// An error in the REST catalog's shape: `{"error": {"message", "type", "code"}}`.
struct CatalogFailure(StatusCode, &'static str, String);

impl IntoResponse for CatalogFailure {
    fn into_response(self) -> Response {
        let CatalogFailure(status, kind, message) = self;
        let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }
}

type Answer = Result<Response, CatalogFailure>;

fn json_response(value: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// The lake's node, once the request's token may read.
async fn reader(server: &Server, headers: &HeaderMap) -> Result<Arc<Node>, CatalogFailure> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or(v.strip_prefix("bearer ")));
    let unauthorized =
        |reason| CatalogFailure(StatusCode::UNAUTHORIZED, "NotAuthorizedException", reason);
    // Every role reads, which is all the catalog does.
    server.tokens.role_of(token).map_err(unauthorized)?;
    let failed = |e| {
        CatalogFailure(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            e,
        )
    };
    server.lakes.node(None).await.map_err(failed)
}

fn no_namespace(name: &str) -> CatalogFailure {
    CatalogFailure(
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
        format!("Namespace does not exist: {name}"),
    )
}

fn no_table(namespace: &str, table: &str) -> CatalogFailure {
    CatalogFailure(
        StatusCode::NOT_FOUND,
        "NoSuchTableException",
        format!("Table does not exist: {namespace}.{table} (or it is not published as Iceberg)"),
    )
}

async fn config(State(server): State<Arc<Server>>, headers: HeaderMap) -> Answer {
    reader(&server, &headers).await?;
    Ok(json_response(json!({"defaults": {}, "overrides": {}})))
}

async fn namespaces(State(server): State<Arc<Server>>, headers: HeaderMap) -> Answer {
    let node = reader(&server, &headers).await?;
    let names: Vec<Value> = node
        .iceberg_namespaces()
        .iter()
        .map(|n| json!([n]))
        .collect();
    Ok(json_response(json!({"namespaces": names})))
}

async fn namespace(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Answer {
    let node = reader(&server, &headers).await?;
    if !node.iceberg_namespaces().contains(&name) {
        return Err(no_namespace(&name));
    }
    Ok(json_response(
        json!({"namespace": [name], "properties": {}}),
    ))
}

async fn tables(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Path(namespace): Path<String>,
) -> Answer {
    let node = reader(&server, &headers).await?;
    if !node.iceberg_namespaces().contains(&namespace) {
        return Err(no_namespace(&namespace));
    }
    let identifiers: Vec<Value> = node
        .iceberg_tables(&namespace)
        .into_iter()
        .map(|name| json!({"namespace": [namespace], "name": name}))
        .collect();
    Ok(json_response(json!({"identifiers": identifiers})))
}

async fn load_table(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Path((namespace, table)): Path<(String, String)>,
) -> Answer {
    let node = reader(&server, &headers).await?;
    let failed = |e: pondra_cluster::NodeError| {
        CatalogFailure(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ServerError",
            e.to_string(),
        )
    };
    let newest = node
        .iceberg_metadata(&namespace, &table)
        .await
        .map_err(failed)?;
    let (location, metadata) = newest.ok_or_else(|| no_table(&namespace, &table))?;
    let metadata: Value = serde_json::from_slice(&metadata).map_err(|e| {
        CatalogFailure(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ServerError",
            e.to_string(),
        )
    })?;
    Ok(json_response(json!({
        "metadata-location": location,
        "metadata": metadata,
        "config": {},
    })))
}

async fn table_exists(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Path((namespace, table)): Path<(String, String)>,
) -> Answer {
    let node = reader(&server, &headers).await?;
    match node.iceberg_tables(&namespace).contains(&table) {
        true => Ok(StatusCode::NO_CONTENT.into_response()),
        false => Err(no_table(&namespace, &table)),
    }
}

/// Creating, committing to and dropping through the catalog are not built: Pondra's own SQL
/// changes its tables, and the publisher brings their metadata along.
async fn refused() -> Answer {
    Err(CatalogFailure(
        StatusCode::NOT_ACCEPTABLE,
        "UnsupportedOperationException",
        "changing tables through the Iceberg REST catalog is not supported yet: change them with SQL, and their metadata follows".into(),
    ))
}
