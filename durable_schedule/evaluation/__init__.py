"""Pure evaluation: no database, no clock."""
