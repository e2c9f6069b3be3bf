"""The contract: record types, Arrow schemas of the Parquet tables, errors."""
