//! Iceberg's column types and schemas as metadata.json and manifests write them, and the
//! single-value serialization of the bounds a manifest keeps per column.

use serde_json::{Value, json};

use crate::error::{Result, StorageError};

/// A column type Pondra writes and reads in Iceberg tables (primitive types only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcebergType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Date,
    /// Microseconds since the epoch, without a zone.
    Timestamp,
    /// Microseconds since the epoch, in UTC.
    Timestamptz,
    String,
    Binary,
    Decimal {
        precision: u32,
        scale: u32,
    },
}

impl IcebergType {
    /// The type as metadata.json names it.
    pub fn json_name(&self) -> String {
        let name = match self {
            IcebergType::Boolean => "boolean",
            IcebergType::Int => "int",
            IcebergType::Long => "long",
            IcebergType::Float => "float",
            IcebergType::Double => "double",
            IcebergType::Date => "date",
            IcebergType::Timestamp => "timestamp",
            IcebergType::Timestamptz => "timestamptz",
            IcebergType::String => "string",
            IcebergType::Binary => "binary",
            IcebergType::Decimal { precision, scale } => {
                return format!("decimal({precision}, {scale})");
            }
        };
        name.to_string()
    }

    /// The type metadata.json names `name`, or None for one not followed here (`uuid`,
    /// `fixed[16]`, `time`, `timestamp_ns`, nested types, ...).
    pub fn from_json_name(name: &str) -> Option<IcebergType> {
        Some(match name {
            "boolean" => IcebergType::Boolean,
            "int" => IcebergType::Int,
            "long" => IcebergType::Long,
            "float" => IcebergType::Float,
            "double" => IcebergType::Double,
            "date" => IcebergType::Date,
            "timestamp" => IcebergType::Timestamp,
            "timestamptz" => IcebergType::Timestamptz,
            "string" => IcebergType::String,
            "binary" => IcebergType::Binary,
            _ => {
                let inside = name.strip_prefix("decimal(")?.strip_suffix(')')?;
                let (precision, scale) = inside.split_once(',')?;
                IcebergType::Decimal {
                    precision: precision.trim().parse().ok()?,
                    scale: scale.trim().parse().ok()?,
                }
            }
        })
    }
}

/// One top-level column of an Iceberg schema; `id` is the field id Parquet files carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcebergField {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub field_type: IcebergType,
}

/// A schema as metadata.json's `schemas` and a manifest's `schema` key hold it.
pub(super) fn schema_json(schema_id: i32, fields: &[IcebergField]) -> Value {
    let fields: Vec<Value> = fields
        .iter()
        .map(|f| {
            json!({
                "id": f.id,
                "name": f.name,
                "required": f.required,
                "type": f.field_type.json_name(),
            })
        })
        .collect();
    json!({ "type": "struct", "schema-id": schema_id, "fields": fields })
}

/// The fields of a schema object of metadata.json; `source` names the file in errors.
pub(super) fn parse_schema_fields(schema: &Value, source: &str) -> Result<Vec<IcebergField>> {
    let malformed = |message: String| StorageError::Location {
        location: source.to_string(),
        message,
    };
    let fields = schema
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("a schema without fields".into()))?;
    let mut parsed = Vec::with_capacity(fields.len());
    for field in fields {
        let id = field.get("id").and_then(Value::as_i64);
        let name = field.get("name").and_then(Value::as_str);
        let (Some(id), Some(name)) = (id, name) else {
            return Err(malformed(format!(
                "a schema field without id or name: {field}"
            )));
        };
        let id = i32::try_from(id).map_err(|_| malformed(format!("field id {id} out of range")))?;
        let type_json = field.get("type").unwrap_or(&Value::Null);
        let field_type = type_json
            .as_str()
            .and_then(IcebergType::from_json_name)
            .ok_or_else(|| {
                StorageError::Unsupported(format!(
                    "the Iceberg column type {type_json} (column {name} in {source})"
                ))
            })?;
        let required = field.get("required").and_then(Value::as_bool);
        parsed.push(IcebergField {
            id,
            name: name.to_string(),
            required: required.unwrap_or(false),
            field_type,
        });
    }
    Ok(parsed)
}

/// A column's lower or upper bound in a manifest. `Timestamp` holds microseconds since the
/// epoch for `timestamp` and `timestamptz` alike; `Decimal` holds the unscaled value.
#[derive(Debug, Clone, PartialEq)]
pub enum IcebergValue {
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Date(i32),
    Timestamp(i64),
    String(String),
    Binary(Vec<u8>),
    Decimal(i128),
}

impl IcebergValue {
    /// Iceberg's single-value serialization: little-endian numbers, UTF-8 strings, and
    /// decimals as big-endian two's complement in the fewest bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            IcebergValue::Boolean(b) => vec![u8::from(*b)],
            IcebergValue::Int(v) | IcebergValue::Date(v) => v.to_le_bytes().to_vec(),
            IcebergValue::Long(v) | IcebergValue::Timestamp(v) => v.to_le_bytes().to_vec(),
            IcebergValue::Float(v) => v.to_le_bytes().to_vec(),
            IcebergValue::Double(v) => v.to_le_bytes().to_vec(),
            IcebergValue::String(s) => s.as_bytes().to_vec(),
            IcebergValue::Binary(b) => b.clone(),
            IcebergValue::Decimal(unscaled) => minimal_twos_complement(*unscaled),
        }
    }
}

/// `value` big-endian, without the leading bytes that only repeat the sign.
fn minimal_twos_complement(value: i128) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let sign_byte = if value < 0 { 0xFF } else { 0x00 };
    let mut start = 0;
    // A leading sign byte can go while the next byte's top bit still says the same sign.
    while start + 1 < bytes.len()
        && bytes[start] == sign_byte
        && (bytes[start + 1] & 0x80) == (sign_byte & 0x80)
    {
        start += 1;
    }
    bytes[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iceberg_type_names_round_trip() {
        let decimal = IcebergType::Decimal {
            precision: 10,
            scale: 2,
        };
        assert_eq!(decimal.json_name(), "decimal(10, 2)");
        assert_eq!(IcebergType::from_json_name("decimal(10,2)"), Some(decimal));
        assert_eq!(
            IcebergType::from_json_name("timestamptz"),
            Some(IcebergType::Timestamptz)
        );
        assert_eq!(IcebergType::from_json_name("uuid"), None);
        assert_eq!(IcebergType::from_json_name("decimal(x,2)"), None);
    }

    #[test]
    fn iceberg_bounds_use_single_value_serialization() {
        assert_eq!(IcebergValue::Int(1).to_bytes(), [1, 0, 0, 0]);
        assert_eq!(
            IcebergValue::Long(-2).to_bytes(),
            [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        );
        assert_eq!(IcebergValue::Boolean(true).to_bytes(), [1]);
        assert_eq!(
            IcebergValue::String("hé".into()).to_bytes(),
            "hé".as_bytes()
        );
        assert_eq!(IcebergValue::Double(1.0).to_bytes(), 1.0f64.to_le_bytes());
        assert_eq!(IcebergValue::Decimal(0).to_bytes(), [0x00]);
        assert_eq!(IcebergValue::Decimal(127).to_bytes(), [0x7F]);
        assert_eq!(IcebergValue::Decimal(128).to_bytes(), [0x00, 0x80]);
        assert_eq!(IcebergValue::Decimal(-1).to_bytes(), [0xFF]);
        assert_eq!(IcebergValue::Decimal(-128).to_bytes(), [0x80]);
        assert_eq!(IcebergValue::Decimal(-129).to_bytes(), [0xFF, 0x7F]);
        assert_eq!(IcebergValue::Decimal(12345).to_bytes(), [0x30, 0x39]);
    }

    #[test]
    fn unfollowed_iceberg_column_types_are_refused_by_name() {
        let schema = json!({"fields": [{"id": 1, "name": "tags", "required": false,
            "type": {"type": "list", "element-id": 2, "element": "string", "element-required": false}}]});
        let error = parse_schema_fields(&schema, "m.json")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("column tags") && error.contains("not supported"),
            "{error}"
        );
    }
}
