ALTER TABLE `deliveries` ADD `order_key` text;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `order_seq` integer;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `order_state` text;--> statement-breakpoint
CREATE INDEX `deliveries_order_idx` ON `deliveries` (`tenant_id`,`destination_id`,`order_key`,`order_seq`) WHERE status = 'pending' and order_key is not null;--> statement-breakpoint
CREATE INDEX `deliveries_waiting_idx` ON `deliveries` (`order_seq`) WHERE order_state = 'waiting';