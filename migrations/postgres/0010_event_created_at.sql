ALTER TABLE "attempts" ADD COLUMN "event_created_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "event_created_at" timestamp (3) with time zone;