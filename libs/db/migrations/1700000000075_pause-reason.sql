-- Up Migration

-- Why a host was paused when trawl paused it itself (the block detector: the host refuses the
-- crawler and no proxy tier is left); null for an operator's pause. A frontier rebuilt from
-- PostgreSQL restores the reason with the pause.
ALTER TABLE paused_hosts ADD COLUMN reason text;

-- Down Migration
ALTER TABLE paused_hosts DROP COLUMN reason;
