CREATE SEQUENCE IF NOT EXISTS "delivery_order_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "order_key" text;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "order_seq" bigint;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "order_state" text;--> statement-breakpoint
CREATE INDEX "deliveries_order_idx" ON "deliveries" USING btree ("tenant_id","destination_id","order_key","order_seq") WHERE status = 'pending' and order_key is not null;--> statement-breakpoint
CREATE INDEX "deliveries_waiting_idx" ON "deliveries" USING btree ("order_seq") WHERE order_state = 'waiting';