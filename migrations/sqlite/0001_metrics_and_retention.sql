ALTER TABLE `attempts` ADD `topic` text;--> statement-breakpoint
ALTER TABLE `attempts` ADD `destination_type` text;--> statement-breakpoint
-- Backfill: the topic from the attempt's delivery, the type from its destination (null when that is gone).
UPDATE `attempts` SET `topic` = (SELECT `topic` FROM `deliveries` WHERE `deliveries`.`id` = `attempts`.`delivery_id`), `destination_type` = (SELECT `type` FROM `destinations` WHERE `destinations`.`tenant_id` = `attempts`.`tenant_id` AND `destinations`.`id` = `attempts`.`destination_id`);--> statement-breakpoint
CREATE INDEX `attempts_time_idx` ON `attempts` (`delivered_at`,`tenant_id`);--> statement-breakpoint
CREATE INDEX `events_time_idx` ON `events` (`time`,`tenant_id`,`topic`);