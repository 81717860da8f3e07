"""Operations: store health (``durable_status``), partition maintenance and recovery."""
