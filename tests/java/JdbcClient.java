// The Postgres JDBC driver (what DBeaver and Metabase connect with) against `pondra serve`:
// the catalog metadata those tools browse, and a prepared statement with a parameter.
// Usage: java -cp postgresql.jar:. JdbcClient PORT; prints "ok" or fails.

import java.sql.*;
import java.util.*;

public class JdbcClient {
    static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError(what);
    }

    static List<String> column(ResultSet rs, String name) throws SQLException {
        List<String> values = new ArrayList<>();
        while (rs.next()) values.add(rs.getString(name));
        rs.close();
        return values;
    }

    // What DBeaver reads when it connects and opens a table's properties (through this
    // driver): its own catalog queries, besides the driver's metadata calls.
    static final String[] DBEAVER = {
        "SELECT current_schema(),session_user",
        "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n"
            + " LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0"
            + " AND d.classoid='pg_namespace'::regclass ORDER BY nspname",
        "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid"
            + " FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r"
            + " from pg_namespace as ns join (select s.r, (current_schemas(false))[s.r] as nspname"
            + " from generate_series(1, array_upper(current_schemas(false), 1)) as s(r)) as r"
            + " using (nspname)) as sp ON sp.nspoid = typnamespace WHERE pg_type.oid = 1007"
            + " ORDER BY sp.r, pg_type.oid DESC",
        "SHOW search_path",
        "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datallowconn AND NOT datistemplate"
            + " ORDER BY db.datname",
        "SELECT * FROM pg_catalog.pg_settings where name='standard_conforming_strings'",
        "SELECT string_agg(word, ',') from pg_catalog.pg_get_keywords()"
            + " where word <> ALL ('{a,abs,absolute,action}'::text[])",
        "SELECT version()",
        "SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1",
        "SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1",
        "SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name,"
            + " d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem"
            + " LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid"
            + " LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL"
            + " AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')",
        "SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr,"
            + " pg_catalog.pg_get_partkeydef(c.oid) as partition_key FROM pg_catalog.pg_class c"
            + " LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0"
            + " AND d.classoid='pg_class'::regclass WHERE c.relnamespace=2200 AND c.relkind not in ('i','I','c')",
        "select c.oid,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,"
            + " pg_catalog.pg_relation_size(c.oid) as rel_size FROM pg_class c WHERE c.relnamespace=2200",
        "SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,"
            + " dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,"
            + " pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,"
            + " pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,"
            + " pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans FROM pg_catalog.pg_index i"
            + " INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid"
            + " LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid"
            + " WHERE i.indrelid='t'::regclass ORDER BY tabrelname, c.relname",
        "SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description,"
            + " case when c.contype='c' then \"substring\"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy"
            + " FROM pg_catalog.pg_constraint c INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid"
            + " LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid"
            + " LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0"
            + " AND d.classoid='pg_constraint'::regclass WHERE c.conrelid='t'::regclass ORDER BY c.oid",
    };

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/lake";
        try (Connection c = DriverManager.getConnection(url, "analyst", "")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE t (id INT NOT NULL, name TEXT, price DECIMAL(10,2))");
                s.execute("INSERT INTO t VALUES (1, 'a', 2.50), (2, 'b', NULL)");
                s.execute("CREATE VIEW v AS SELECT id FROM t");
                s.execute("CHECKPOINT");
            }
            DatabaseMetaData md = c.getMetaData();
            check(md.getDatabaseProductVersion().startsWith("14"), md.getDatabaseProductVersion());
            List<String> schemas = column(md.getSchemas(), "TABLE_SCHEM");
            check(schemas.contains("public"), "schemas " + schemas);
            List<String> tables = column(md.getTables(null, "public", "%", new String[] {"TABLE"}), "TABLE_NAME");
            check(tables.equals(List.of("t")), "tables " + tables);
            List<String> views = column(md.getTables(null, "public", "%", new String[] {"VIEW"}), "TABLE_NAME");
            check(views.equals(List.of("v")), "views " + views);
            try (Statement s = c.createStatement()) {
                s.execute("CREATE SCHEMA sales");
                s.execute("CREATE TABLE sales.orders (id INT, amount BIGINT)");
            }
            schemas = column(md.getSchemas(), "TABLE_SCHEM");
            check(schemas.contains("sales"), "schemas " + schemas);
            List<String> sales = column(md.getTables(null, "sales", "%", new String[] {"TABLE"}), "TABLE_NAME");
            check(sales.equals(List.of("orders")), "tables of sales " + sales);
            List<String> salesColumns = column(md.getColumns(null, "sales", "orders", "%"), "COLUMN_NAME");
            check(salesColumns.equals(List.of("id", "amount")), "columns of sales.orders " + salesColumns);
            try (Statement s = c.createStatement()) {
                s.execute("DROP SCHEMA sales CASCADE");
            }
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE k (region TEXT, id INT, name TEXT, PRIMARY KEY (region, id))");
                s.execute("CREATE INDEX k_name ON k (name)");
            }
            // Metabase's sync reads each table's primary key and foreign keys.
            List<String> keys = new ArrayList<>();
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "k")) {
                while (rs.next()) {
                    keys.add(rs.getString("COLUMN_NAME") + " " + rs.getInt("KEY_SEQ") + " " + rs.getString("PK_NAME"));
                }
            }
            check(keys.equals(List.of("region 1 k_pkey", "id 2 k_pkey")), "primary key " + keys);
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "t")) {
                check(!rs.next(), "t has no primary key");
            }
            try (ResultSet rs = md.getImportedKeys(null, "public", "k")) {
                check(!rs.next(), "k has no foreign keys");
            }
            List<String> indexes = new ArrayList<>();
            try (ResultSet rs = md.getIndexInfo(null, "public", "k", false, false)) {
                while (rs.next()) {
                    indexes.add(rs.getString("INDEX_NAME") + " " + rs.getBoolean("NON_UNIQUE") + " "
                            + rs.getInt("ORDINAL_POSITION") + " " + rs.getString("COLUMN_NAME"));
                }
            }
            check(indexes.equals(List.of("k_pkey false 1 region", "k_pkey false 2 id", "k_name true 1 name")),
                    "indexes " + indexes);
            ResultSet columns = md.getColumns(null, "public", "t", "%");
            List<String> described = new ArrayList<>();
            while (columns.next()) {
                described.add(columns.getString("COLUMN_NAME") + " " + columns.getString("TYPE_NAME")
                        + " " + columns.getInt("DATA_TYPE") + " " + columns.getString("IS_NULLABLE"));
            }
            List<String> expected = List.of(
                    "id int4 " + Types.INTEGER + " NO",
                    "name varchar " + Types.VARCHAR + " YES",
                    "price numeric " + Types.NUMERIC + " YES");
            check(described.equals(expected), "columns " + described);
            try (PreparedStatement ps = c.prepareStatement("SELECT id, name, price FROM t WHERE id > ? ORDER BY id")) {
                ps.setInt(1, 0);
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next() && rs.getInt(1) == 1 && rs.getString(2).equals("a")
                            && rs.getBigDecimal(3).compareTo(new java.math.BigDecimal("2.50")) == 0, "first row");
                    check(rs.next() && rs.getInt(1) == 2 && rs.getBigDecimal(3) == null, "second row");
                    check(!rs.next(), "two rows");
                }
            }
            // As a connection pool hands it out (Metabase's): read-only, in a transaction; then
            // Metabase's probe of whether a table can be read.
            c.setReadOnly(true);
            c.setAutoCommit(false);
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT TRUE AS _ FROM \"public\".\"t\" WHERE 1 <> 1 LIMIT 0")) {
                check(!rs.next(), "the probe reads no rows");
            }
            c.commit();
            c.setAutoCommit(true);
            c.setReadOnly(false);
            try (Statement s = c.createStatement()) {
                for (String query : DBEAVER) {
                    try (ResultSet rs = s.executeQuery(query)) {
                        while (rs.next()) {}
                    } catch (SQLException e) {
                        throw new AssertionError(query + ": " + e.getMessage());
                    }
                }
                try (ResultSet rs = s.executeQuery(DBEAVER[4])) {
                    check(rs.next() && rs.getString("datname").equals("pondra"), "DBeaver's database list");
                }
                try (ResultSet rs = s.executeQuery(DBEAVER[2])) {
                    check(rs.next() && rs.getBoolean("is_array") && rs.getString("typname").equals("_int4"),
                            "the driver's array type lookup");
                }
                try (ResultSet rs = s.executeQuery("SELECT pg_total_relation_size('t'::regclass),"
                        + " pg_relation_size('v'::regclass)")) {
                    check(rs.next() && rs.getLong(1) > 0 && rs.getLong(2) == 0, "table sizes");
                }
            }
        }
        System.out.println("ok");
    }
}
